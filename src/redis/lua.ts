// The Lua loader the service's scripts use: the lock package's (@flashsale/lock/toolkit), so the
// service and the locks share one loader; plus reply decoding shared by the service's modules.
import { replyInt } from '@flashsale/lock/toolkit';

export {
  defineScripts,
  type InputOf,
  type LuaScript,
  LuaScriptError,
  loadLua,
  luaHeader,
  luaScript,
  replyInt,
  type ScriptInput,
  type TypedScript,
  type TypedScriptSpec,
  typedScript,
} from '@flashsale/lock/toolkit';

/** A script's reply as integers (Lua tables arrive as arrays under RESP2 and RESP3). */
export function replyInts(reply: unknown): number[] {
  if (!Array.isArray(reply)) throw new TypeError(`expected an array reply, got ${String(reply)}`);
  return reply.map(replyInt);
}
