// The Lua loader the service's scripts use: the lock package's (src/lock/lua.ts), so the lock library
// stays self-contained and the service shares one loader with it; plus reply decoding shared by all.
import { replyInt } from '../lock/lua.ts';

export * from '../lock/lua.ts';

/** A script's reply as integers (Lua tables arrive as arrays under RESP2 and RESP3). */
export function replyInts(reply: unknown): number[] {
  if (!Array.isArray(reply)) throw new TypeError(`expected an array reply, got ${String(reply)}`);
  return reply.map(replyInt);
}
