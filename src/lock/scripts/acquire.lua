-- Reentrant lock acquire, Redisson layout: KEYS[1] is a hash {owner -> re-entry count} whose PEXPIRE is
-- the lease. On top of Redisson's script it hands out a fencing token and, when the lock is held, puts
-- the caller in a FIFO queue so that release can hand the lock straight to one waiter (no herd).
--
-- KEYS[1] lock hash (the lock name)
-- KEYS[2] fencing token counter (never expires, never reset)
-- KEYS[3] waiter queue: zset owner -> first-ask time (server microseconds)
-- KEYS[4] waiter info: hash owner -> "<clientId>|<leaseMs>|<eligibleUntilMs>"
-- ARGV[1] lease in ms
-- ARGV[2] owner id (<clientUuid>:<ownerId>)
-- ARGV[3] mode: "try" (never queue), "wait" (queue if held), "retry" (a queued waiter asking again)
-- ARGV[4] client id (names the waiter's wake channel)
-- ARGV[5] ms the waiter stays eligible for a hand-off from now (its remaining wait)
-- Returns {token, holdCount} when acquired, else the holder's PTTL (Redisson's contract).
local lease = tonumber(ARGV[1])
local owner = ARGV[2]
local mode = ARGV[3]

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  if mode == 'retry' then
    redis.call('zrem', KEYS[3], owner)
    redis.call('hdel', KEYS[4], owner)
  end
  return {redis.call('incr', KEYS[2]), 1}
end

local held = redis.call('hget', KEYS[1], owner)
if held then
  if mode == 'retry' then
    -- A queued waiter that finds itself the owner was handed the lock and missed the wake message.
    return {tonumber(redis.call('get', KEYS[2])), tonumber(held)}
  end
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  return {redis.call('incr', KEYS[2]), count}
end

local pttl = redis.call('pttl', KEYS[1])
if mode ~= 'try' then
  local t = redis.call('time')
  local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local eligible = tonumber(ARGV[5])
  -- NX keeps a waiter's place across its retries; the info hash carries what release needs to hand off.
  redis.call('zadd', KEYS[3], 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
  redis.call('hset', KEYS[4], owner, ARGV[4] .. '|' .. lease .. '|' .. (nowMs + eligible))
  local keep = eligible + lease + 60000
  if redis.call('pttl', KEYS[3]) < keep then
    redis.call('pexpire', KEYS[3], keep)
    redis.call('pexpire', KEYS[4], keep)
  end
end
return pttl
