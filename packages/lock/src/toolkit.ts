// Second entry point (@flashsale/lock/toolkit): the building blocks the locks are made of, for apps
// that write Lua scripts of their own beside the locks: the typed Lua loader, the connection helpers
// that work on a single Redis and on a cluster alike, the coded-error base, and the locks' key layout.
export { CodedError, isConnectionError, type LockErrorCode } from './coded-error.ts';
export { fairKeys, lockKeys, prefixName, redlockKeys, rwKeys } from './keys.ts';
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
} from './lua.ts';
export {
  type BatchCommand,
  type BatchPipeline,
  duplicateClient,
  isCluster,
  masterOf,
  onMessage,
  publish,
  type RedisClient,
  runBatch,
  subscribe,
  unsubscribe,
} from './redis-client.ts';
