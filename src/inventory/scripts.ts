// The inventory's Lua scripts, registered on a connection once and callable on it and its pipelines.
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.ts';
import { defineScripts, luaScript, replyInts, typedScript } from '../redis/lua.ts';

/** reserve.lua: the guarded, fenced decrement plus the reservation; answers {status, stockLeft, token}. */
export const RESERVE = typedScript({
  name: 'flashsaleReserve',
  file: new URL('./scripts/reserve.lua', import.meta.url),
  keys: ['lock', 'tokenCounter', 'stock', 'fence', 'sold', 'reservations'],
  args: ['owner', 'token', 'quantity', 'id', 'entry', 'deadline', 'startsAt', 'endsAt', 'fenced'],
  parse: (reply) => replyInts(reply),
});

const SCRIPTS = [
  RESERVE,
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
export type InventoryRedis = RedisClient & InventoryCommands<Promise<unknown>>;
export type InventoryPipeline = ChainableCommander & InventoryCommands<ChainableCommander>;

export function withInventoryScripts(redis: RedisClient): InventoryRedis {
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
  notStarted: -5,
  ended: -6,
  held: -7,
} as const;
