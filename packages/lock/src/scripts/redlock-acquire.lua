-- Multi-master lock: one master's part of an acquisition round, on the reentrant lock's hash layout.
-- No hand-off here (a master cannot know whether a waiter will win a majority); instead a waiter
-- queues (queue.lua) so that a release can wake exactly the oldest waiter and reserve the freed lock
-- for it for a moment (KEYS[6]), instead of waking every waiter on every master.
--
-- KEYS[1] lock: hash (the lock name)
-- KEYS[2] token: fencing token counter of this master
-- KEYS[3] queue: zset owner -> ticket
-- KEYS[4] waiters: waiter info: hash owner -> "m|<clientId>|<leaseMs>|<wakeAtMs>"
-- KEYS[5] deadlines: zset owner -> server ms
-- KEYS[6] reservation: string owner, PX = how long a freed lock is kept for the woken head
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: id
-- ARGV[3] mode: "try" (never queue), "wait"/"retry" (queue, keeping the place, whatever the outcome:
--         the entry goes at release, or when the waiter gives up)
-- ARGV[4] clientId: client id (names the waiter's wake channel)
-- ARGV[5] eligibleMs: ms the waiter stays queued from now without asking again (its deadline)
-- ARGV[6] heartbeatMs: heartbeat: the longest a queued waiter sleeps before asking again (ms)
-- ARGV[7] wakePrefix: wake channel prefix
-- ARGV[8] name: lock name, echoed in wake messages
-- Returns {token, holdCount} when taken here, else how long until it may be free here (ms).
--- @include "queue.lua"
local Q, now = q_open(KEYS[3], KEYS[5], KEYS[4], ARGV[7], ARGV[8])
local lease = tonumber(ARGV[1])
local owner = ARGV[2]
local mode = ARGV[3]

local function queue(pttl)
  if mode == 'try' then
    return
  end
  local wakeIn = q_wake_in(Q, owner, pttl, tonumber(ARGV[6]))
  q_enqueue(Q, owner, 'm', ARGV[4], lease, tonumber(ARGV[5]), now + wakeIn, now)
end

local held = redis.call('hget', KEYS[1], owner)
if held then
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  return {redis.call('incr', KEYS[2]), count}
end

if redis.call('exists', KEYS[1]) == 0 then
  local reserved = redis.call('get', KEYS[6])
  if not reserved or reserved == owner then
    redis.call('del', KEYS[6])
    redis.call('hset', KEYS[1], owner, 1)
    redis.call('pexpire', KEYS[1], lease)
    queue(lease)
    return {redis.call('incr', KEYS[2]), 1}
  end
  local pttl = redis.call('pttl', KEYS[6])
  queue(pttl)
  return math.max(pttl, 1)
end

local pttl = redis.call('pttl', KEYS[1])
queue(pttl)
return pttl
