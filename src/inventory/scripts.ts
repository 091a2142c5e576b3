// The inventory's Lua scripts as typed commands: the order's guarded reserve, and an admin change's
// journal, retire and switch. Their reply codes and what they mean live in replies.ts.
import { replyInt, replyInts, typedScript } from '../redis/lua.ts';

const file = (name: string) => new URL(`./scripts/${name}`, import.meta.url);

/** reserve.lua: the guarded, fenced decrement plus the reservation; answers {status, stockLeft, token}. */
export const RESERVE = typedScript({
  name: 'flashsaleReserve',
  file: file('reserve.lua'),
  keys: ['lock', 'tokenCounter', 'stock', 'fence', 'sold', 'reservations'],
  args: ['owner', 'token', 'quantity', 'id', 'entry', 'deadline', 'startsAt', 'endsAt', 'fenced'],
  parse: replyInts,
});

/** journal.lua: journals a change; answers the generation reserved for it, or JournalReply.refused. */
export const JOURNAL = typedScript({
  name: 'flashsaleJournal',
  file: file('journal.lua'),
  keys: ['sale', 'adminLock'],
  args: ['owner', 'generation', 'change'],
  parse: replyInt,
});

/** retire-recorded.lua: empties a shard, recording what it held; answers {status, stock, sold}. */
export const RETIRE = typedScript({
  name: 'flashsaleRetireRecorded',
  file: file('retire-recorded.lua'),
  keys: ['lock', 'stock', 'sold', 'retired'],
  args: ['owner', 'token?'],
  parse: replyInts,
});

/** switch.lua: makes a generation current (list and sale hash together); answers a SwitchReply. */
export const SWITCH = typedScript({
  name: 'flashsaleSwitch',
  file: file('switch.lua'),
  keys: ['sale', 'shardList'],
  args: [
    'generation',
    'perUserLimit',
    'totalDelta',
    'retiredSold',
    'createdAt',
    'startsAt',
    'endsAt',
    'paymentTimeoutSec',
    'returningTaken',
    '...stockKeys',
  ],
  parse: replyInt,
});

/** Every inventory script, e.g. to define them on a connection before queueing them on its pipelines. */
export const INVENTORY_SCRIPTS = [RESERVE, JOURNAL, RETIRE, SWITCH] as const;
