// How one environment variable is read: its name, parser, bounds and default, declared together by
// `variable()`; the value parsers the sections share (integers, rate limits, URLs, address lists).
import { isIP } from 'node:net';
import os from 'node:os';
import { z } from 'zod';

/** One environment variable: its name and the schema that parses it (with its default). */
export interface Variable<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly schema: S;
}

/** Declares the variable `name` read with `schema`; the schema carries the default. */
export function variable<S extends z.ZodType>(name: string, schema: S): Variable<S> {
  return { name, schema };
}

/** An integer in min..max, `def` when unset; a bad value is told the range, in words. */
export const int = (def: number, min: number, max: number) => intIn(min, max).default(def);

/** An integer in min..max (no default). */
export const intIn = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};

/** A number in min..max, `def` when unset. */
export const numberIn = (def: number, min: number, max: number) => {
  const error = `must be a number from ${min} to ${max}`;
  return z.coerce.number({ error }).min(min, { error }).max(max, { error }).default(def);
};

/** One of `values`, told as a list when it is not. */
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` });

/** Any URL. */
export const url = (def: string) =>
  z
    .string()
    .default(def)
    .refine((v) => URL.canParse(v), 'must be a URL');

/** A URL whose scheme is one of `schemes` (e.g. a Redis URL must not be http://). */
export const urlWith = (def: string, schemes: readonly string[]) =>
  z
    .string()
    .default(def)
    .refine((v) => URL.canParse(v), 'must be a URL')
    .refine((v) => !URL.canParse(v) || schemes.includes(new URL(v).protocol.slice(0, -1)), {
      message: `the scheme must be ${schemes.map((s) => `${s}://`).join(' or ')}`,
    });

/**
 * A rate limit `<rate>:<burst>` (requests per second, bucket size; e.g. `5:10`), or `off`.
 * Parsed to undefined when off.
 */
export const rateLimit = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v, ctx) => {
      if (v === 'off') return undefined;
      const m = /^(\d+(?:\.\d+)?):(\d+)$/.exec(v);
      const rate = Number(m?.[1]);
      const burst = Number(m?.[2]);
      if (!m || !(rate > 0) || !(burst >= 1) || burst > 1_000_000) {
        ctx.addIssue({ code: 'custom', message: 'must be <requests per second>:<burst> (e.g. 5:10) or off' });
        return z.NEVER;
      }
      return { rate, burst };
    });

/** The entries of a comma list, each passing `valid`; else an issue naming the first bad one. */
function entries(v: string, ctx: z.RefinementCtx, valid: (entry: string) => boolean, explain: string) {
  const all = v.split(',').map((e) => e.trim());
  const bad = all.find((e) => !valid(e));
  if (bad === undefined) return all;
  ctx.addIssue({ code: 'custom', message: `"${bad}" is not ${explain}` });
  return z.NEVER;
}

/** Seed nodes `host:port,...` of a Redis Cluster; undefined when unset. */
export const clusterNodes = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const nodes = v.split(',').map((entry) => {
        const m = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$/.exec(entry.trim());
        const port = Number(m?.[2]);
        return m?.[1] && port >= 1 && port <= 65535 ? { host: m[1].replace(/^\[|\]$/g, ''), port } : null;
      });
      if (nodes.some((n) => n === null)) {
        ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of host:port' });
        return z.NEVER;
      }
      return nodes as { host: string; port: number }[];
    });

const HTTP_ENDPOINT =
  /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?\/?$|^https?:\/\/\[[0-9A-Fa-f:]+\](:\d{1,5})?\/?$/;

/** etcd endpoints `http(s)://host:port,...`. */
export const httpEndpoints = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v, ctx) => entries(v, ctx, (e) => HTTP_ENDPOINT.test(e), 'an http(s)://host:port endpoint'));

/** Named address ranges of Express' `trust proxy` (proxy-addr). */
const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, address/prefix or range name of TRUST_PROXY. */
function trustedProxyEntry(entry: string): boolean {
  if (TRUST_PROXY_NAMES.has(entry)) return true;
  const [address, prefix, extra] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

/** `false` (trust no proxy), or a comma list of addresses, CIDRs and proxy-addr range names. */
export const trustProxy = () =>
  z
    .string()
    .default('false')
    .transform((v, ctx) =>
      v === 'false'
        ? (false as const)
        : entries(
            v,
            ctx,
            trustedProxyEntry,
            'an address, CIDR or loopback/linklocal/uniquelocal (or set false)',
          ),
    );

/** A process count: `auto` (one per core) or 1..64. */
export const processCount = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v, ctx) => {
      if (v === 'auto') return os.availableParallelism();
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 64) {
        ctx.addIssue({ code: 'custom', message: 'must be auto or an integer 1..64' });
        return z.NEVER;
      }
      return n;
    });
