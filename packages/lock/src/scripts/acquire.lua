-- Reentrant lock acquire in Redisson's layout (KEYS[1]: hash {owner -> re-entry count}, PEXPIRE = the
-- lease), plus a fencing token and, when the lock is held, a FIFO wait queue that release hands off to.
--
-- Each wait has its own id, so two waits of one owner (re-entrant chains) never stand for each other.
--
-- KEYS[1] lock: the lock hash (the lock name)
-- KEYS[2] token: fencing token counter (never reset)
-- KEYS[3] queue: waiter queue, zset waitId -> first-ask time (server microseconds)
-- KEYS[4] waiters: waiter info, hash waitId -> "<clientId>|<leaseMs>|<eligibleUntilMs>|<owner>"
-- KEYS[5] handed: hand-offs not yet collected, hash waitId -> token
-- KEYS[6] ours: "held by one of ours" flag: its holder hands off on release, so our waiters need not
--         listen on the Redisson channel (which only Redisson's own clients publish on)
-- KEYS[7] latch: unlock latch of the release pipelined right after this acquire (checked when paired)
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: owner id (<clientUuid>:<ownerId>)
-- ARGV[3] mode: "try" (never queue), "wait" (queue if held), "retry" (a queued waiter asking again)
-- ARGV[4] clientId: client id (names the waiter's wake channel)
-- ARGV[5] eligibleMs: ms the waiter stays eligible for a hand-off from now (its remaining wait)
-- ARGV[6] waitId: wait id (unique per acquire call)
-- ARGV[7] paired: "1" when a release with the latch KEYS[7] follows in the same pipeline, else ""
-- Returns {token, holdCount} when acquired; when held, the holder's PTTL (Redisson's contract) or,
-- when the holder is one of ours (it will hand off), {0, pttl}.
-- (AcquireCode in replies.ts: 0 HeldByOurs; tokens start at 1.)
--- @include "time.lua"
local lease = ARGV[1]
local owner = ARGV[2]
local mode = ARGV[3]
local wait = ARGV[6]

local function take(count)
  if mode == 'retry' then
    redis.call('zrem', KEYS[3], wait)
    redis.call('hdel', KEYS[4], wait)
  end
  return {redis.call('incr', KEYS[2]), count}
end

-- The common case first: one EXISTS finds the lock free and, for a paired acquire, its release not run.
-- (Unpaired, KEYS[7] is the latch of request id "", which no release writes.)
if mode ~= 'retry' and redis.call('exists', KEYS[1], KEYS[7]) == 0 then
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('set', KEYS[6], 1, 'px', lease)
  return take(1)
end

-- ioredis re-sends a pipeline whose reply was lost. If its release already ran, this acquire is that
-- re-send: taking the lock again would leave a hold nobody releases (the re-sent release is answered
-- from its latch), so answer "not acquired" and change nothing.
if ARGV[7] == '1' and redis.call('exists', KEYS[7]) == 1 then
  return redis.call('pttl', KEYS[1])
end

if mode == 'retry' then
  -- A hand-off whose wake message this waiter missed.
  local handed = redis.call('hget', KEYS[5], wait)
  if handed then
    redis.call('hdel', KEYS[5], wait)
    local held = redis.call('hget', KEYS[1], owner)
    if held then
      return {tonumber(handed), tonumber(held)}
    end
  end
  if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hset', KEYS[1], owner, 1)
    redis.call('pexpire', KEYS[1], lease)
    redis.call('set', KEYS[6], 1, 'px', lease)
    return take(1)
  end
end

if redis.call('hexists', KEYS[1], owner) == 1 then
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('pexpire', KEYS[6], lease)
  return take(count)
end

local pttl = redis.call('pttl', KEYS[1])
if mode ~= 'try' then
  local nowMs, nowUs = now_ms_us()
  local eligible = tonumber(ARGV[5])
  -- NX keeps a waiter's place across its retries; the info hash carries what release needs to hand off.
  redis.call('zadd', KEYS[3], 'NX', nowUs, wait)
  redis.call('hset', KEYS[4], wait, ARGV[4] .. '|' .. lease .. '|' .. (nowMs + eligible) .. '|' .. owner)
  local keep = eligible + tonumber(lease) + 60000
  if redis.call('pttl', KEYS[3]) < keep then
    redis.call('pexpire', KEYS[3], keep)
    redis.call('pexpire', KEYS[4], keep)
  end
end
if redis.call('exists', KEYS[6]) == 1 then
  return {0, pttl}
end
return pttl
