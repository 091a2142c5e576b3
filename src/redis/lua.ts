// The Lua loader the service's scripts use: the lock package's (src/lock/lua.ts), so the lock library
// stays self-contained and the service shares one loader with it.
export * from '../lock/lua.ts';
