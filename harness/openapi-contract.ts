// The contract check of every answer the tests receive through call(): it must validate (Ajv, JSON
// Schema 2020-12) against the OpenAPI document for its route, method and status, headers included.
// Each process prints, as it exits, how many answers and routes it checked.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../src/http/openapi/document.ts';

type Json = Record<string, unknown>;
interface ResponseDoc {
  headers?: Record<string, { required?: boolean; schema?: Json }>;
  content?: Record<string, { schema?: Json }>;
}
/** An answer as call() has it: the raw text of its body, the parsed JSON if it is JSON. */
export interface CheckedAnswer {
  status: number;
  headers: Headers;
  text: string;
}

const DOC_ID = 'openapi.json';
const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, Json>>; components: Json };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(doc as object, DOC_ID);

const validators = new Map<string, ValidateFunction>();
const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** The compiled schema at a JSON pointer of the document (its $refs resolve inside it). */
function schemaAt(ptr: string): ValidateFunction {
  let v = validators.get(ptr);
  if (!v) {
    v = ajv.compile({ $ref: `${DOC_ID}#/${ptr}` });
    validators.set(ptr, v);
  }
  return v;
}

const templates = Object.keys(doc.paths).map((t) => ({
  template: t,
  pattern: new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+').replaceAll('.', '\\.')}$`),
}));

/** The documented path of a request path (query left out), if any. */
function routeOf(path: string): string | undefined {
  const bare = path.split('?')[0] ?? '';
  return templates.find((t) => t.pattern.test(bare))?.template;
}

/** Where the document says the answer is: the operation's response, else an any-route one. */
function responseFor(
  method: string,
  route: string | undefined,
  status: number,
): { ptr: string; key: string } {
  const op =
    route === undefined ? undefined : doc.paths[route]?.[method === 'HEAD' ? 'get' : method.toLowerCase()];
  const responses = op?.responses as Record<string, unknown> | undefined;
  if (responses?.[String(status)]) {
    return {
      ptr: pointer(
        'paths',
        route as string,
        method === 'HEAD' ? 'get' : method.toLowerCase(),
        'responses',
        String(status),
      ),
      key: `${method} ${route} ${status}`,
    };
  }
  const general =
    status === 405
      ? 'MethodNotAllowed'
      : status === 500
        ? 'Internal'
        : status === 404 && !op
          ? 'NotFound'
          : undefined;
  if (general) return { ptr: pointer('components', 'responses', general), key: `any ${status}` };
  if (!op && status >= 400)
    return { ptr: pointer('components', 'responses', 'Refused'), key: `any ${status}` };
  throw new Error(
    `OpenAPI: ${method} ${route ?? '(no route)'} answered ${status}, which the document does not list`,
  );
}

function fail(what: string, errors: unknown): never {
  throw new Error(`OpenAPI contract: ${what} does not match the document: ${JSON.stringify(errors)}`);
}

function checkHeaders(where: string, ptr: string, response: ResponseDoc, headers: Headers): void {
  for (const [name, h] of Object.entries(response.headers ?? {})) {
    const value = headers.get(name);
    if (value === null) {
      if (h.required) fail(`${where}: header ${name}`, 'missing');
      continue;
    }
    const v = schemaAt(`${ptr}/headers/${pointer(name)}/schema`);
    if (!v(value)) fail(`${where}: header ${name}=${value}`, v.errors);
  }
}

/** A text/event-stream answer: each `queued` and the `result` event, and the result's body for its status. */
function checkStream(method: string, route: string | undefined, text: string, where: string): void {
  for (const block of text.split(/\n\n/)) {
    const event = /^event: (.+)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    if (event !== undefined && data !== undefined) checkEvent(method, route, event, data, where);
  }
}

/** One event of a stream: `queued` or `result`, and the result's body for its status. */
function checkEvent(method: string, route: string | undefined, event: string, data: string, where: string) {
  const name =
    event === 'queued' ? 'QueuedEvent' : event === 'result' ? 'ResultEvent' : fail(where, `event ${event}`);
  const parsed = JSON.parse(data) as { status: number; body: unknown };
  const v = schemaAt(pointer('components', 'schemas', name));
  if (!v(parsed)) fail(`${where} event ${event}`, v.errors);
  if (event === 'result') {
    const { ptr } = responseFor(method, route, parsed.status);
    const body = schemaAt(`${ptr}/content/${pointer('application/json')}/schema`);
    if (!body(parsed.body)) fail(`${where} result ${parsed.status}`, body.errors);
  }
}

/** An event of a streamed POST /api/orders read one at a time (test/support/event-stream.ts). */
export function checkOrderEvent(event: string, data: string): void {
  checkEvent('POST', '/api/orders', event, data, 'POST /api/orders (stream)');
  checked.events++;
}

const checked = { answers: 0, events: 0, unrouted: 0, keys: new Set<string>(), routes: new Set<string>() };

/** Checks one answer to `method path`; throws naming what does not match. */
export function checkAnswer(method: string, path: string, answer: CheckedAnswer): void {
  const route = routeOf(path);
  // A route a test or benchmark adds to the app for itself (ApiExtension), not the service's.
  if (route === undefined && answer.status < 400) {
    checked.unrouted++;
    return;
  }
  const { ptr, key } = responseFor(method, route, answer.status);
  const where = `${method} ${path} → ${answer.status}`;
  const response = ajvResolve(ptr);
  checkHeaders(where, ptr, response, answer.headers);
  const type = (answer.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  if (method !== 'HEAD' && answer.text !== '') {
    if (!response.content?.[type])
      fail(`${where}: content type "${type}"`, Object.keys(response.content ?? {}));
    if (type === 'application/json') {
      const v = schemaAt(`${ptr}/content/${pointer(type)}/schema`);
      if (!v(JSON.parse(answer.text))) fail(where, v.errors);
    } else if (type === 'text/event-stream') checkStream(method, route, answer.text, where);
  }
  checked.answers++;
  checked.keys.add(key);
  if (route) checked.routes.add(`${method === 'HEAD' ? 'GET' : method} ${route}`);
}

/** The response object at a pointer, its `$ref` followed (components.responses). */
function ajvResolve(ptr: string): ResponseDoc {
  let node: unknown = doc;
  for (const part of ptr.split('/')) node = (node as Json)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  const ref = (node as { $ref?: string }).$ref;
  return ref ? ajvResolve(ref.slice(2)) : (node as ResponseDoc);
}

/** The operations (`GET /api/products/{productId}`) answers were checked for, so far. */
export function checkedRoutes(): ReadonlySet<string> {
  return checked.routes;
}

/** What this process checked so far. */
export function contractTally(): { answers: number; routes: number; statuses: number } {
  return { answers: checked.answers, routes: checked.routes.size, statuses: checked.keys.size };
}

// Under the test runner only (a benchmark's or load run's output stays its own).
process.once('exit', () => {
  if (checked.answers === 0 || process.env.NODE_TEST_CONTEXT === undefined) return;
  const t = contractTally();
  const events = checked.events > 0 ? `, ${checked.events} stream events` : '';
  const outside = checked.unrouted > 0 ? `; ${checked.unrouted} of routes outside it (a test's own) not` : '';
  console.log(
    `OpenAPI contract: ${t.answers} answers checked on ${t.routes} routes (${t.statuses} route-status pairs)${events}${outside}`,
  );
});
