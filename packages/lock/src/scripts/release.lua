-- Reentrant lock release (Redisson layout) with an unlock latch, in Go sync.Mutex's two modes. At zero
-- holds, normal mode: the lock is freed for whoever asks first (barging), the oldest live queued waiter
-- is woken to compete (only its client is told) and "0" goes out on Redisson's channel. Starvation mode,
-- when that waiter has waited longer than starvationMs: the lock is handed to it directly, so nobody
-- can barge past it (the lock is never free in between).
--
-- The latch answers a request the client sends again (ioredis re-sends a command whose reply was lost)
-- with the result it had, instead of counting a hold down twice. Redisson (Java) waiters listen for the
-- "0" on the Redisson channel, so every release that leaves the lock free sends it, as Redisson's does.
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
--         if it was handed to that wait; a free lock's next waiter is woken in its place); "force"
--         (delete whoever holds it)
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
-- ARGV[12] starvationMs: a waiter queued longer than this is handed the lock (starvation mode)
-- Wake messages: hand-off [name, waitId, token]; wake-up to compete [name, waitId, "head", 0].
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

-- Takes the oldest live waiter out of the queue: its entry, first-ask score, wait as decoded, and how
-- long it has waited (ms); nil when nobody live is queued. A waiter past its eligibility has given up
-- or died: its entry stays out. The server's time is read only when somebody is queued, as the
-- uncontended case has an empty queue. (ZPOPMIN, then ZADD back when the waiter only gets woken: in
-- starvation mode, the usual one under heavy contention, that is one command instead of two.)
local function pop_live_head()
  local nowUs
  for _ = 1, 1000 do
    local head = redis.call('zpopmin', KEYS[5])
    if #head == 0 then
      return nil
    end
    nowUs = nowUs or select(2, now_ms_us())
    local ok, w = pcall(cjson.decode, head[1])
    local waitedMs = (nowUs - tonumber(head[2])) / 1000
    if ok and type(w) == 'table' and #w == 5 and waitedMs <= w[4] then
      return head[1], head[2], w, waitedMs
    end
  end
  return nil
end

-- Starvation mode: the lock goes straight to the wait w (its note is the hand-off's marker: a wait
-- that missed the message collects it).
local function hand_off(w)
  local wait, lease, next = w[1], w[3], w[5]
  redis.call('hset', KEYS[1], next, 1)
  redis.call('pexpire', KEYS[1], lease)
  local token = redis.call('incr', KEYS[4])
  redis.call('set', KEYS[6], wait .. '|' .. token, 'px', lease)
  redis.call('publish', ARGV[4] .. w[2], cjson.encode({ARGV[5], wait, token}))
end

-- Puts the popped head back in its place and wakes it to ask again and compete for the free lock
-- (only its client is told).
local function wake(entry, score, w)
  redis.call('zadd', KEYS[5], score, entry)
  redis.call('publish', ARGV[4] .. w[2], cjson.encode({ARGV[5], w[1], 'head', 0}))
end

-- The lock is free: hand it to a starving head, else leave it free, wake the head to compete and send
-- Redisson's notice. Returns 1, the release's "released".
local function pass_on(entry, score, w, waitedMs)
  if entry and waitedMs >= tonumber(ARGV[12]) then
    hand_off(w)
    return 1
  end
  if entry then
    wake(entry, score, w)
  end
  publish_unlock(KEYS[2], ARGV[7])
  return 1
end

local function free()
  redis.call('del', KEYS[1], KEYS[6])
  return pass_on(pop_live_head())
end

if mode == 'cancel' then
  -- The wait gives up: its own queue entry goes whatever the owner holds.
  local lease, clientId = ARGV[6], ARGV[9]
  redis.call('zrem', KEYS[5], wait_entry(waitId, clientId, lease, ARGV[10], owner),
    wait_entry(waitId, clientId, lease, ARGV[11], owner))
  -- Only a hold that was handed to this very wait is given back; the owner's other holds stay.
  if note_hand_off(redis.call('get', KEYS[6])) ~= waitId then
    -- It may have been the one a release woke to compete: then the next waiter is woken instead.
    if redis.call('exists', KEYS[1]) == 0 then
      local entry, score, w = pop_live_head()
      if entry then
        wake(entry, score, w)
      end
    end
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
