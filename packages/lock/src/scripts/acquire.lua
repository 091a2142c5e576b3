-- Reentrant lock acquire in Redisson's layout (KEYS[1]: hash {owner -> re-entry count}, PEXPIRE = the
-- lease), plus a fencing token and, when the lock is held, a FIFO wait queue that release hands off to.
--
-- Each wait has its own id, so two waits of one owner (re-entrant chains) never stand for each other.
--
-- KEYS[1] lock: the lock hash (the lock name)
-- KEYS[2] token: fencing token counter (never reset)
-- KEYS[3] queue: waiter queue, zset waitId -> first-ask time (server microseconds)
-- KEYS[4] waiters: waiter info, hash waitId -> "<clientId>|<leaseMs>|<eligibleUntilMs>|<owner>"
-- KEYS[5] ours: "held by one of ours" note, with the lock's lease: "1" when taken directly,
--         "<waitId>|<token>" when a release handed it to that wait (so a wait that missed its wake
--         message collects its hold). Its holder hands off on release, so our waiters need not listen
--         on the Redisson channel (which only Redisson's own clients publish on)
-- KEYS[6] latch: unlock latch of the release pipelined right after this acquire (checked when paired)
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: owner id (<clientUuid>:<ownerId>)
-- ARGV[3] mode: "try" (never queue), "wait" (queue if held), "retry" (a queued waiter asking again)
-- ARGV[4] clientId: client id (names the waiter's wake channel)
-- ARGV[5] eligibleMs: ms the waiter stays eligible for a hand-off from now (its remaining wait)
-- ARGV[6] waitId: wait id (unique per acquire call)
-- ARGV[7] paired: "1" when a release with the latch KEYS[6] follows in the same pipeline, else ""
-- Returns {token, holdCount} when acquired; when held, the holder's PTTL (Redisson's contract) or,
-- when the holder is one of ours (it will hand off), {0, pttl}.
-- (AcquireCode in replies.ts: 0 HeldByOurs; tokens start at 1.)
--- @include "time.lua"
--- @include "hand-off-note.lua"
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

local function take_free()
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('set', KEYS[5], 1, 'px', lease)
  return take(1)
end

-- The common case first: one EXISTS finds the lock free and, for a paired acquire, its release not run.
-- (Unpaired, KEYS[6] is the latch of request id "", which no release writes.)
if mode ~= 'retry' and redis.call('exists', KEYS[1], KEYS[6]) == 0 then
  return take_free()
end

-- ioredis re-sends a pipeline whose reply was lost. If its release already ran, this acquire is that
-- re-send: taking the lock again would leave a hold nobody releases (the re-sent release is answered
-- from its latch), so answer "not acquired" and change nothing.
if ARGV[7] == '1' and redis.call('exists', KEYS[6]) == 1 then
  return redis.call('pttl', KEYS[1])
end

if mode == 'retry' then
  -- A hand-off whose wake message this waiter missed: its token is in the note.
  local handedTo, handed = note_hand_off(redis.call('get', KEYS[5]))
  if handedTo == wait then
    local held = redis.call('hget', KEYS[1], owner)
    if held then
      return {handed, tonumber(held)}
    end
  end
  if redis.call('exists', KEYS[1]) == 0 then
    return take_free()
  end
end

if redis.call('hexists', KEYS[1], owner) == 1 then
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('pexpire', KEYS[5], lease)
  return take(count)
end

-- The note lives exactly as long as our holder's lease, so its PTTL is the lock's: one call tells both.
local pttl = redis.call('pttl', KEYS[5])
local ours = pttl ~= -2
if not ours then
  pttl = redis.call('pttl', KEYS[1])
end
if mode ~= 'try' then
  local nowMs, nowUs = now_ms_us()
  local eligible = tonumber(ARGV[5])
  -- NX keeps a waiter's place across its retries; the info hash carries what release needs to hand off.
  redis.call('zadd', KEYS[3], 'NX', nowUs, wait)
  redis.call('hset', KEYS[4], wait, ARGV[4] .. '|' .. lease .. '|' .. (nowMs + eligible) .. '|' .. owner)
  -- The queue keys outlive every entry: eligibility + lease + 60 s. They are set a minute beyond that
  -- when short, so the waiters queueing in the next minute pay one PTTL, not two PEXPIREs.
  local keep = eligible + tonumber(lease) + 60000
  if redis.call('pttl', KEYS[3]) < keep then
    redis.call('pexpire', KEYS[3], keep + 60000)
    redis.call('pexpire', KEYS[4], keep + 60000)
  end
end
if ours then
  return {0, pttl}
end
return pttl
