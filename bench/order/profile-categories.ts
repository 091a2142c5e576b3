// Self time of a V8 CPU profile by category (express, validation, logging, metrics, async hooks,
// Redis client, socket writes, JSON, GC, our code…): a sample in Node's internals or a native
// function counts for the nearest caller that belongs to a category, so a socket write under ioredis
// is a Redis write and one under express an HTTP write.

export interface Frame {
  functionName: string;
  url: string;
}

const PACKAGES: Array<[RegExp, string]> = [
  [
    /\/node_modules\/(express|router|finalhandler|send|serve-static|on-finished|statuses|http-errors|depd|merge-descriptors|parseurl|proxy-addr|forwarded|ipaddr\.js|accepts|negotiator|vary|fresh|range-parser|etag|cookie|content-disposition|qs|encodeurl|escape-html|mime-types|mime-db|path-to-regexp|is-promise)\//,
    'express (routing, request/response)',
  ],
  [
    /\/node_modules\/(body-parser|raw-body|type-is|content-type|iconv-lite|bytes|unpipe|media-typer)\//,
    'body parsing (body-parser)',
  ],
  [/\/node_modules\/zod\//, 'validation (zod)'],
  [
    /\/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|safe-stable-stringify|on-exit-leak-free|atomic-sleep)\//,
    'logging (pino)',
  ],
  [/\/node_modules\/(prom-client|tdigest|bintrees)\//, 'metrics (prom-client)'],
  [/\/node_modules\/(redis-parser|redis-errors)\//, 'Redis reply parsing'],
  [
    /\/node_modules\/(ioredis|@ioredis\/commands|denque|cluster-key-slot|standard-as-callback|lodash\.\w+)\//,
    'Redis client (ioredis)',
  ],
  [/\/node_modules\/(bullmq|msgpackr|uuid|cron-parser|semver)\//, 'BullMQ enqueue'],
  [/\/node_modules\/jose\//, 'buyer identity (jose)'],
  [
    /^node:(internal\/)?async_hooks|async_local_storage|async_context_frame/,
    'async hooks / AsyncLocalStorage',
  ],
];

const SOCKET_WRITE =
  /^(writev|writeUtf8String|writeBuffer|writeLatin1String|writeAsciiString|writeGeneric|writevGeneric|_writeGeneric|_writev|_write|write|doWrite|handleWriteReq|writeOrBuffer)$/;
const JSON_FN = /^(stringify|parse|JSONStringify|JSONParse|SerializeJSONObject)$/;

/** The category of a frame by itself, or undefined (node internals, V8 builtins). */
function own(f: Frame): string | undefined {
  const url = f.url.replace(/^file:\/\//, '');
  for (const [re, name] of PACKAGES) if (re.test(url)) return name;
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `package ${pkg[1]}`;
  if (url.includes('/src/'))
    return `our code (${url
      .slice(url.indexOf('/src/') + 1)
      .split('/')
      .slice(0, 2)
      .join('/')})`;
  if (url.includes('/bench/')) return 'our code (bench routes)';
  if (f.functionName === '(garbage collector)') return 'GC';
  if (f.functionName === '(idle)') return 'idle';
  if (f.functionName === '(program)') return 'V8 (program)';
  return undefined;
}

/**
 * The category of a sample whose stack is `stack` (leaf first). Socket writes and JSON are named as
 * such, with the caller's category (Redis or HTTP); node:http / node:net frames with no caller of ours
 * count as the HTTP server.
 */
export function categoryOf(stack: Frame[]): string {
  const leaf = stack[0];
  if (!leaf) return 'unknown';
  const direct = own(leaf);
  if (direct) return direct;
  // The nearest caller with a category, and whether Node's HTTP/net code lies between it and the leaf.
  let owner: string | undefined;
  let viaHttp = false;
  for (const f of stack.slice(1)) {
    owner = own(f);
    if (owner) break;
    if (HTTP_INTERNALS.test(f.url)) viaHttp = true;
  }
  const name = leaf.functionName;
  if (
    SOCKET_WRITE.test(name) ||
    stack.slice(0, 4).some((f) => SOCKET_WRITE.test(f.functionName) && f.url.startsWith('node:'))
  ) {
    if (owner?.startsWith('Redis') || owner?.startsWith('BullMQ')) return 'socket writes (Redis)';
    return 'socket writes (HTTP)';
  }
  if (!leaf.url && JSON_FN.test(name)) return `JSON (${owner ?? 'node'})`;
  if (/randomFillSync|randomBytes/.test(name)) return `crypto random (${owner ?? 'node'})`;
  // Node's HTTP machinery (headers, parser, response objects), whoever called it.
  if (viaHttp || HTTP_INTERNALS.test(leaf.url)) return HTTP_NODE;
  return owner ?? 'node internals / native, other';
}

const HTTP_INTERNALS = /^node:(_http|http|net|internal\/(http|stream_base|streams|net))/;
const HTTP_NODE = 'node:http / net (server, parser, headers, sockets)';
