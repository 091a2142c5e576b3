// The inventory's Lua scripts, registered on a connection once and callable on it and its pipelines.
import type { ChainableCommander, Redis } from 'ioredis';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';

const SCRIPTS = [
  luaScript('flashsaleReserve', 6, new URL('./scripts/reserve.lua', import.meta.url)),
  luaScript('flashsaleAdjust', 2, new URL('./scripts/adjust.lua', import.meta.url)),
  luaScript('flashsaleRetireRecorded', 4, new URL('./scripts/retire-recorded.lua', import.meta.url)),
  luaScript('flashsaleJournal', 2, new URL('./scripts/journal.lua', import.meta.url)),
  luaScript('flashsaleSwitch', 2, new URL('./scripts/switch.lua', import.meta.url)),
] as const;

type Arg = string | number;
type InventoryCommands<R> = {
  flashsaleReserve(...args: Arg[]): R;
  flashsaleAdjust(...args: Arg[]): R;
  flashsaleRetireRecorded(...args: Arg[]): R;
  flashsaleJournal(...args: Arg[]): R;
  flashsaleSwitch(...args: Arg[]): R;
};
export type InventoryRedis = Redis & InventoryCommands<Promise<unknown>>;
export type InventoryPipeline = ChainableCommander & InventoryCommands<ChainableCommander>;

export function withInventoryScripts(redis: Redis): InventoryRedis {
  defineScripts(redis, SCRIPTS);
  return redis as InventoryRedis;
}

/** Status codes shared by the guarded shard scripts. */
export const ShardStatus = {
  ok: 1,
  insufficient: 0,
  notOwner: -1,
  staleToken: -2,
  retired: -3,
  expired: -4,
} as const;

/** A script's reply as integers (Lua tables arrive as arrays under RESP2 and RESP3). */
export function replyInts(reply: unknown): number[] {
  if (!Array.isArray(reply)) throw new TypeError(`expected an array reply, got ${String(reply)}`);
  return reply.map(replyInt);
}
