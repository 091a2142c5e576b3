// Loads Lua scripts from .lua files (expanding `--- @include "<file>.lua"` lines) and runs them as
// typed commands on ioredis clients and pipelines (defineCommand: EVALSHA with an EVAL fallback).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './redis-client.ts';

export interface LuaScript {
  /** Command name added to the connection and its pipelines. */
  name: string;
  numberOfKeys: number;
  /** The script with its includes expanded: one self-contained EVAL. */
  source: string;
}

/** A .lua file whose includes, KEYS/ARGV header or declaration are inconsistent (a programming error). */
export class LuaScriptError extends Error {
  readonly code = 'lua_script_invalid';
  override name = 'LuaScriptError';
}

const INCLUDE = /^--- @include "([^"]+)"[ \t]*$/gm;

/**
 * The file's text with every `--- @include "<file>"` line replaced by that file's contents, resolved
 * relative to the including file, recursively. Each file is included once: a second include of it
 * (from anywhere in the tree) expands to nothing, as in BullMQ's script loader.
 */
export function loadLua(file: URL): string {
  const seen = new Set<string>([file.href]);
  const expand = (from: URL, stack: string[]): string =>
    readFileSync(from, 'utf8').replace(INCLUDE, (_line, path: string) => {
      const target = new URL(path, from);
      if (stack.includes(target.href)) {
        throw new LuaScriptError(`${from.pathname}: include cycle through ${target.pathname}`);
      }
      if (seen.has(target.href)) return '';
      seen.add(target.href);
      return expand(target, [...stack, target.href]).replace(/\n$/, '');
    });
  return expand(file, [file.href]);
}

/** An untyped script (callers pass KEYS then ARGV positionally); prefer typedScript. */
export function luaScript(name: string, numberOfKeys: number, file: URL): LuaScript {
  return { name, numberOfKeys, source: loadLua(file) };
}

/** Defines the scripts on a connection (its pipelines created afterwards get them too). */
export function defineScripts(redis: RedisClient, scripts: readonly LuaScript[]): void {
  for (const s of scripts) defineScript(redis, s);
}

function defineScript(redis: RedisClient, s: LuaScript): void {
  if (typeof (redis as unknown as Record<string, unknown>)[s.name] === 'function') return;
  redis.defineCommand(s.name, { numberOfKeys: s.numberOfKeys, lua: s.source });
}

/**
 * The names a script's header documents, in order: lines `-- KEYS[n] <name>: ...` and
 * `-- ARGV[n] <name>: ...` of the file itself (not of its includes). An optional trailing argument is
 * written `-- ARGV[n] <name>?:`, a list taking the rest of ARGV `-- ARGV[n..] ...<name>:`, and the
 * names keep those marks. Throws when the numbering has gaps.
 */
export function luaHeader(text: string, file = 'script'): { keys: string[]; args: string[] } {
  const found = { KEYS: [] as string[], ARGV: [] as string[] };
  for (const m of text.matchAll(/^--\s*(KEYS|ARGV)\[(\d+)(?:\.\.)?\]\s+((?:\.\.\.)?[A-Za-z_]\w*\??):/gm)) {
    const list = found[m[1] as 'KEYS' | 'ARGV'];
    if (Number(m[2]) !== list.length + 1) {
      throw new LuaScriptError(`${file}: ${m[1]}[${m[2]}] out of order in the header`);
    }
    list.push(m[3] as string);
  }
  return { keys: found.KEYS, args: found.ARGV };
}

type Value = string | number;
/** Argument names of a typed script: `name`, `name?` (optional, trailing) or `...name` (the rest, a list). */
type PlainName<A> = A extends `${string}?` | `...${string}` ? never : A;
type OptionalName<A> = A extends `${infer N}?` ? N : never;
type RestName<A> = A extends `...${infer N}` ? N : never;
/** Named KEYS and ARGV of a typed script. */
export type ScriptInput<K extends string, A extends string> = {
  readonly [P in K | PlainName<A>]: Value;
} & { readonly [P in OptionalName<A>]?: Value } & { readonly [P in RestName<A>]: readonly Value[] };

/** The named input a typed script takes. */
export type InputOf<S> = S extends TypedScript<infer K, infer A, unknown> ? ScriptInput<K, A> : never;

export interface TypedScript<K extends string, A extends string, R> extends LuaScript {
  readonly file: URL;
  readonly keys: readonly K[];
  readonly args: readonly A[];
  /** Runs the script on a client (as EVALSHA, EVAL on NOSCRIPT; defining it there for later pipelines) and parses its reply. */
  run(redis: RedisClient, input: ScriptInput<K, A>): Promise<R>;
  /** Queues the script on a pipeline (its client must have the script defined; see `define`). */
  run(pipeline: ChainableCommander, input: ScriptInput<K, A>): ChainableCommander;
  /** Parses a reply of this script (e.g. from a pipeline's exec). */
  parse(reply: unknown): R;
  /** KEYS then ARGV in the script's order, for EVAL/EVALSHA by hand. */
  values(input: ScriptInput<K, A>): Value[];
  /** Defines the script on a client, so pipelines created from it can queue it. */
  define(redis: RedisClient): void;
}

export interface TypedScriptSpec<K extends string, A extends string, R> {
  /** Command name added to the connection (unique per script source). */
  name: string;
  file: URL;
  /** KEYS names in order; must match the file's `-- KEYS[n] <name>:` header. */
  keys: readonly K[];
  /**
   * ARGV names in order; must match the file's `-- ARGV[n] <name>:` header. `name?` is optional
   * (only optional ones may follow it; one left out leaves out the rest), `...name` takes a list (last).
   */
  args: readonly A[];
  /** Turns the raw reply into R (default: the reply as is). */
  parse?: (reply: unknown) => R;
}

/**
 * A script called with named keys and arguments, e.g.
 * `const renew = typedScript({ name: 'renew', file, keys: ['lock'], args: ['leaseMs', 'owner'] })`
 * then `await renew.run(redis, { lock, leaseMs: 5000, owner })` or `renew.run(pipeline, {...})`.
 * Throws LuaScriptError at load when the file's KEYS/ARGV header names differ from the declaration.
 */
export function typedScript<const K extends string, const A extends string, R = unknown>(
  spec: TypedScriptSpec<K, A, R>,
): TypedScript<K, A, R> {
  const header = luaHeader(readFileSync(spec.file, 'utf8'), spec.file.pathname);
  const same = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && a.every((x, i) => x === b[i]);
  if (!same(header.keys, spec.keys) || !same(header.args, spec.args)) {
    throw new LuaScriptError(
      `${spec.file.pathname}: header KEYS ${header.keys.join(',')} / ARGV ${header.args.join(',')} ` +
        `differ from the declaration KEYS ${spec.keys.join(',')} / ARGV ${spec.args.join(',')}`,
    );
  }
  checkArgShapes(spec.keys, spec.args, spec.file);
  const parse = spec.parse ?? ((reply: unknown) => reply as R);
  // Most scripts take only plain arguments: their values are read in one pass, with no name parsing.
  const names = [...spec.keys, ...spec.args];
  const plain = spec.args.every((a) => !a.endsWith('?') && !a.startsWith('...'));
  const script = {
    name: spec.name,
    numberOfKeys: spec.keys.length,
    source: loadLua(spec.file),
    file: spec.file,
    keys: spec.keys,
    args: spec.args,
    parse,
    values: (input: ScriptInput<K, A>): Value[] => {
      const named = input as unknown as Record<string, Value | readonly Value[] | undefined>;
      if (plain) return names.map((n) => named[n] as Value);
      return [...spec.keys.map((k) => named[k] as Value), ...argValues(spec.args, named)];
    },
    define: (redis: RedisClient) => defineScript(redis, script),
    run(target: RedisClient | ChainableCommander, input: ScriptInput<K, A>): Promise<R> | ChainableCommander {
      // ioredis marks its pipelines; a class test would fail on another copy of ioredis.
      if ((target as { isPipeline?: boolean }).isPipeline !== true) {
        // Defined too, so that pipelines made from this client later can queue it; the run itself
        // never goes through the defined command (see evalOn).
        defineScript(target as RedisClient, script);
        return evalOn(target as RedisClient, script, script.values(input)).then(parse);
      }
      const command = (target as unknown as Record<string, (...v: Value[]) => unknown>)[spec.name];
      if (typeof command !== 'function') {
        throw new LuaScriptError(
          `script ${spec.name} is not defined on this pipeline's client: call define(redis) before pipeline()`,
        );
      }
      return command.apply(target, script.values(input)) as ChainableCommander;
    },
  };
  return script as TypedScript<K, A, R>;
}

const shas = new WeakMap<LuaScript, string>();

/**
 * Runs a script on a client as EVALSHA, and as EVAL when Redis answers NOSCRIPT (as ioredis' own
 * defined commands do), without defining a command on the client. With auto-pipelining on, a command
 * defined on the client after the current tick's pipeline was created is missing from that pipeline:
 * ioredis then keeps the command's callback without queueing it, and the pipeline's exec fails with
 * `results[i] is not iterable` for the whole batch. EVALSHA and EVAL are built in, so a run never
 * depends on when (or whether) its script was defined on the connection.
 */
function evalOn(redis: RedisClient, script: LuaScript, values: Value[]): Promise<unknown> {
  let sha = shas.get(script);
  if (sha === undefined) {
    sha = createHash('sha1').update(script.source).digest('hex');
    shas.set(script, sha);
  }
  return redis
    .evalsha(sha, script.numberOfKeys, ...values)
    .catch((err: unknown) =>
      err instanceof Error && err.message.startsWith('NOSCRIPT')
        ? redis.eval(script.source, script.numberOfKeys, ...values)
        : Promise.reject(err),
    );
}

/** Refuses a KEYS entry that is not plain, an optional argument followed by a required one or a list, and a list that is not last. */
function checkArgShapes(keys: readonly string[], args: readonly string[], file: URL): void {
  // numberOfKeys is fixed per defined command: KEYS take no optional or list entries.
  const key = keys.find((k) => k.endsWith('?') || k.startsWith('...'));
  if (key) throw new LuaScriptError(`${file.pathname}: KEYS ${key} must be a plain name`);
  args.forEach((a, i) => {
    const next = args[i + 1];
    const bad =
      (a.startsWith('...') && next !== undefined) ||
      (a.endsWith('?') && next !== undefined && !next.endsWith('?'));
    if (bad) throw new LuaScriptError(`${file.pathname}: ARGV ${a} cannot be followed by ${next}`);
  });
}

/** ARGV in order: a list spread, an optional argument left out with every one after it. */
function argValues(
  args: readonly string[],
  input: Record<string, Value | readonly Value[] | undefined>,
): Value[] {
  const out: Value[] = [];
  for (const a of args) {
    if (a.startsWith('...')) {
      out.push(...(input[a.slice(3)] as readonly Value[]));
      continue;
    }
    const optional = a.endsWith('?');
    const value = input[optional ? a.slice(0, -1) : a] as Value;
    if (optional && value === undefined) break;
    out.push(value);
  }
  return out;
}

/** Integer replies arrive as numbers (RESP2/RESP3 integers) or numeric strings (Lua string results). */
export function replyInt(reply: unknown): number {
  const n =
    typeof reply === 'number'
      ? reply
      : typeof reply === 'string' && reply !== ''
        ? Number(reply)
        : Number.NaN;
  if (!Number.isInteger(n)) throw new TypeError(`expected an integer reply, got ${JSON.stringify(reply)}`);
  return n;
}
