-- Fair lock acquire. KEYS[1] is the lock hash in Redisson's layout ({owner -> re-entry count}, PEXPIRE
-- = lease), so renewal, isLocked and Redisson's plain lock see it as a lock. On top of it a strict FIFO
-- queue (queue.lua): nobody takes a free lock while a live waiter asked before them (no barging, not
-- even tryAcquire), and a free lock found with waiters queued goes to the oldest of them at once.
--
-- KEYS[1] lock: hash (the lock name)
-- KEYS[2] token: fencing token counter (the reentrant lock's, so tokens stay monotonic per name)
-- KEYS[3] queue: zset owner -> ticket
-- KEYS[4] waiters: waiter info: hash owner -> "x|<clientId>|<leaseMs>|<wakeAtMs>"
-- KEYS[5] deadlines: zset owner -> server ms
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: id
-- ARGV[3] mode: "try" (never queue), "wait" (queue if not acquired), "retry" (a queued waiter asking again)
-- ARGV[4] clientId: client id (names the waiter's wake channel)
-- ARGV[5] eligibleMs: ms the waiter stays eligible from now (its remaining wait, capped): its deadline
-- ARGV[6] heartbeatMs: heartbeat: the longest a queued waiter sleeps before asking again (ms)
-- ARGV[7] wakePrefix: wake channel prefix
-- ARGV[8] name: lock name, echoed in wake messages
-- Returns {1, token, holdCount, grantedMs} when acquired (grantedMs: the lease in force, shorter than
-- asked only for a grant found by a retry), else {0, pttl, wakeInMs}: the holder's PTTL and when the
-- caller should ask again (the head: when the holder's lease may lapse; the others: their heartbeat).
-- (QueuedCode in replies.ts: 1 Acquired, 0 Waiting.)
--- @include "queue.lua"
local Q, now = q_open(KEYS[3], KEYS[5], KEYS[4], ARGV[7], ARGV[8])
local lease = tonumber(ARGV[1])
local owner = ARGV[2]
local mode = ARGV[3]

local held = redis.call('hget', KEYS[1], owner)
if held then
  if mode == 'retry' then
    -- A queued waiter that finds itself the owner was granted the lock and missed the message.
    return {1, tonumber(redis.call('get', KEYS[2])), tonumber(held), redis.call('pttl', KEYS[1])}
  end
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, redis.call('incr', KEYS[2]), count, lease}
end

if redis.call('exists', KEYS[1]) == 0 then
  local head = q_head(Q)
  if head and head ~= owner then
    -- Free, but others asked first: the oldest live waiter gets it, and we queue behind.
    q_grant_hash(Q, KEYS[1], KEYS[2], now)
    held = redis.call('hget', KEYS[1], owner)
    if held then
      return {1, tonumber(redis.call('get', KEYS[2])), tonumber(held), redis.call('pttl', KEYS[1])}
    end
  end
  if redis.call('exists', KEYS[1]) == 0 then
    q_remove(Q, owner)
    redis.call('hset', KEYS[1], owner, 1)
    redis.call('pexpire', KEYS[1], lease)
    local token = redis.call('incr', KEYS[2])
    q_wake_head(Q, lease, now)
    return {1, token, 1, lease}
  end
end

local pttl = redis.call('pttl', KEYS[1])
if mode ~= 'try' then
  local wakeIn = q_wake_in(Q, owner, pttl, tonumber(ARGV[6]))
  q_enqueue(Q, owner, 'x', ARGV[4], lease, tonumber(ARGV[5]), now + wakeIn, now)
  q_wake_head(Q, pttl, now)
  return {0, pttl, wakeIn}
end
q_wake_head(Q, pttl, now)
return {0, pttl, 0}
