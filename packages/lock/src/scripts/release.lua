-- Reentrant lock release (Redisson layout) with an unlock latch and a direct hand-off: at zero holds
-- the lock passes to the oldest live queued waiter (only its client is told), else "0" on Redisson's channel.
--
-- The latch answers a request the client sends again (ioredis re-sends a command whose reply was lost)
-- with the result it had, instead of counting a hold down twice. With nobody queued the lock is deleted
-- and "0" published on the Redisson channel, which is what Redisson (Java) waiters listen for.
--
-- KEYS[1] lock: the lock hash
-- KEYS[2] channel: Redisson unlock channel, redisson_lock__channel:{name}
-- KEYS[3] latch: unlock latch of this request
-- KEYS[4] token: fencing token counter
-- KEYS[5] queue: waiter queue (zset wait entry -> first-ask time in server microseconds; an entry is
--         JSON [waitId, clientId, leaseMs, eligibleMs, owner], eligibleMs counted from its score)
-- KEYS[6] ours: "held by one of ours" note ("1", or "<waitId>|<token>" for a hand-off; see acquire.lua)
-- ARGV[1] owner: owner id
-- ARGV[2] mode: "release"; "cancel" (wait ARGV[8] gives up: leave the queue, and release the lock only
--         if it was handed to that wait); "force" (delete whoever holds it)
-- ARGV[3] latchTtlMs: unlock latch ttl in ms
-- ARGV[4] wakePrefix: wake channel prefix; the waiter's client id is appended
-- ARGV[5] name: lock name, echoed in the wake message
-- ARGV[6] leaseMs: lease in ms to keep while re-entry holds remain (cancel: the wait's lease)
-- ARGV[7] sharded: "1" on a Redis Cluster (the unlock notice is an SPUBLISH), else ""
-- ARGV[8] waitId: in cancel mode, the wait that gives up; else ''
-- ARGV[9] clientId: in cancel mode, that wait's client; else ''
-- ARGV[10] eligibleMs: in cancel mode, the eligibility of the wait's last ask; else ''
-- ARGV[11] queuedEligibleMs: in cancel mode, that of the ask before (the last ask's reply may have been
--         lost, so the entry of either may be queued; see wait-entry.lua); else ''
-- Returns nil when the owner does not hold the lock, 0 when holds remain, 1 when released.
-- (ReleaseCode in replies.ts: 0 HoldsRemain, 1 Released.)
--- @include "time.lua"
--- @include "latch.lua"
--- @include "unlock-notice.lua"
--- @include "hand-off-note.lua"
--- @include "wait-entry.lua"
local owner = ARGV[1]
local mode = ARGV[2]
local waitId = ARGV[8]

-- Hands the free lock to the oldest live waiter; false when nobody is queued (the server's time is
-- read only then, as the common case has an empty queue).
local function handOff()
  local nowMs
  for _ = 1, 1000 do
    local head = redis.call('zpopmin', KEYS[5])
    if #head == 0 then
      return false
    end
    nowMs = nowMs or now_ms()
    local ok, w = pcall(cjson.decode, head[1])
    -- A waiter past its eligibility has given up or died: skip it rather than park the lock on it.
    if ok and type(w) == 'table' and #w == 5 and math.floor(tonumber(head[2]) / 1000) + w[4] >= nowMs then
      local wait, lease, next = w[1], w[3], w[5]
      redis.call('hset', KEYS[1], next, 1)
      redis.call('pexpire', KEYS[1], lease)
      local token = redis.call('incr', KEYS[4])
      -- The note (one SET) is also the hand-off's marker: a wait that missed the message collects it.
      redis.call('set', KEYS[6], wait .. '|' .. token, 'px', lease)
      redis.call('publish', ARGV[4] .. w[2], cjson.encode({ARGV[5], wait, token}))
      return true
    end
  end
  return false
end

local function free()
  redis.call('del', KEYS[1], KEYS[6])
  return pass_on_or_notify(handOff, KEYS[2], ARGV[7])
end

if mode == 'cancel' then
  -- The wait gives up: its own queue entry goes whatever the owner holds.
  local lease, clientId = ARGV[6], ARGV[9]
  redis.call('zrem', KEYS[5], wait_entry(waitId, clientId, lease, ARGV[10], owner),
    wait_entry(waitId, clientId, lease, ARGV[11], owner))
  -- Only a hold that was handed to this very wait is given back; the owner's other holds stay.
  if note_hand_off(redis.call('get', KEYS[6])) ~= waitId then
    return nil
  end
end

-- What this release will do, known up front: one HGET tells "not held", "holds remain" and "last hold".
local count
if mode == 'force' then
  count = redis.call('exists', KEYS[1])
else
  count = tonumber(redis.call('hget', KEYS[1], owner))
end
if not count or count == 0 then
  -- Not held: a re-sent request that already released is answered with its result.
  return latch_get(KEYS[3])
end
local result = 1
if mode ~= 'force' and count > 1 then
  result = 0
end
local earlier = latch_claim(KEYS[3], result, ARGV[3])
if earlier then
  return earlier
end
if result == 0 then
  redis.call('hincrby', KEYS[1], owner, -1)
  redis.call('pexpire', KEYS[1], ARGV[6])
  redis.call('pexpire', KEYS[6], ARGV[6])
  return 0
end
return free()
