-- Reentrant lock acquire in Redisson's layout (KEYS[1]: hash {owner -> re-entry count}, PEXPIRE = the
-- lease), plus a fencing token and, when the lock is held, a wait queue in first-ask order: a release
-- wakes its head to compete for the freed lock, or hands it the lock once it has starved (release.lua).
-- A free lock goes to whichever acquire reaches it first (barging); a woken waiter that lost keeps its place.
--
-- Each wait has its own id, so two waits of one owner (re-entrant chains) never stand for each other.
-- A queue entry is the wait itself, JSON [waitId, clientId, leaseMs, eligibleMs, owner] (eligibleMs
-- counted from its score, the first ask): what a hand-off needs, with no second key to write and read.
--
-- KEYS[1] lock: the lock hash (the lock name)
-- KEYS[2] token: fencing token counter (never reset)
-- KEYS[3] queue: waiter queue, zset wait entry -> first-ask time (server microseconds)
-- KEYS[4] ours: "held by one of ours" note, with the lock's lease: "1" when taken directly,
--         "<waitId>|<token>" when a release handed it to that wait (so a wait that missed its wake
--         message collects its hold). Its holder wakes or hands off on release, so our waiters need not listen
--         on the Redisson channel (which only Redisson's own clients publish on)
-- KEYS[5] latch: unlock latch of the release pipelined right after this acquire (checked when paired)
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: owner id (<clientUuid>:<ownerId>)
-- ARGV[3] mode: "try" (never queue), "wait" (queue if held), "retry" (a queued waiter asking again)
-- ARGV[4] clientId: the waiter's client, which a hand-off tells ("" for a try)
-- ARGV[5] eligibleMs: this ask's eligibility, integer ms from the wait's first ask ("" for a try)
-- ARGV[6] waitId: wait id (unique per acquire call)
-- ARGV[7] queuedEligibleMs: that of the wait's previous ask, whose entry a 'retry' replaces keeping its
--         place ("" for a try)
-- ARGV[8] paired: "1" when a release with the latch KEYS[5] follows in the same pipeline, else ""
-- Returns {token, holdCount} when acquired; when held, the holder's PTTL (Redisson's contract) or,
-- when the holder is one of ours (its release will wake or hand off to our queue), {0, pttl}.
-- (AcquireCode in replies.ts: 0 HeldByOurs; tokens start at 1.)
--- @include "time.lua"
--- @include "hand-off-note.lua"
--- @include "wait-entry.lua"
local lease = ARGV[1]
local owner = ARGV[2]
local mode = ARGV[3]
local waitId = ARGV[6]

-- The entry of this ask, and of the wait's previous one (built only on the paths that queue).
local function entries()
  local clientId = ARGV[4]
  return wait_entry(waitId, clientId, lease, ARGV[5], owner), wait_entry(waitId, clientId, lease, ARGV[7], owner)
end

local function take(count)
  if mode == 'retry' then
    local _, queued = entries()
    redis.call('zrem', KEYS[3], queued)
  end
  return {redis.call('incr', KEYS[2]), count}
end

local function take_free()
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('set', KEYS[4], 1, 'px', lease)
  return take(1)
end

local mine
if ARGV[8] == '1' then
  -- One EXISTS finds the lock free and its paired release not run.
  if redis.call('exists', KEYS[1], KEYS[5]) == 0 then
    return take_free()
  end
  -- ioredis re-sends a pipeline whose reply was lost. If its release already ran, this acquire is that
  -- re-send: taking the lock again would leave a hold nobody releases (the re-sent release is answered
  -- from its latch), so answer "not acquired" and change nothing.
  if redis.call('exists', KEYS[5]) == 1 then
    return redis.call('pttl', KEYS[1])
  end
  mine = redis.call('hexists', KEYS[1], owner) == 1
else
  -- One HKEYS tells free, re-entry and held (the hash has a field per holding owner, normally one).
  local holders = redis.call('hkeys', KEYS[1])
  if #holders == 0 then
    return take_free()
  end
  mine = false
  for _, holder in ipairs(holders) do
    mine = mine or holder == owner
  end
  -- Held by this owner on a retry: a hand-off to this very wait whose message it missed (its token is
  -- in the note), or a re-entry. Read only then: a woken waiter finds the lock free or held by another.
  if mine and mode == 'retry' then
    local handedTo, handed = note_hand_off(redis.call('get', KEYS[4]))
    if handedTo == waitId then
      return {handed, tonumber(redis.call('hget', KEYS[1], owner))}
    end
  end
end

if mine then
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('pexpire', KEYS[4], lease)
  return take(count)
end

-- The note lives exactly as long as our holder's lease, so its PTTL is the lock's: one call tells both.
local pttl = redis.call('pttl', KEYS[4])
local ours = pttl ~= -2
if not ours then
  pttl = redis.call('pttl', KEYS[1])
end
if mode ~= 'try' then
  local wait, queued = entries()
  -- A retry keeps its place: its entry is replaced by this ask's (a later eligibility) at the same score.
  local first = mode == 'retry' and redis.call('zscore', KEYS[3], queued)
  if first then
    if queued ~= wait then
      redis.call('zrem', KEYS[3], queued)
      redis.call('zadd', KEYS[3], first, wait)
    end
  else
    local _, nowUs = now_ms_us()
    redis.call('zadd', KEYS[3], nowUs, wait)
  end
  -- The queue outlives its waiters by a minute: every live waiter asks again within its heartbeat.
  redis.call('pexpire', KEYS[3], tonumber(lease) + 60000)
end
if ours then
  return {0, pttl}
end
return pttl
