-- Read-write lock acquire (state in rw-lib.lua, queue in queue.lua). Readers share; a writer excludes
-- everyone else; both re-enter; a writer may also take the read lock (then release the write lock to
-- downgrade). A reader asking for the write lock is refused at once (-1): waiting could never end.
-- The queue is FIFO across readers and writers, so a reader arriving while a writer waits queues
-- behind it (no barging), and a writer waits at most for the holds present when it queued.
--
-- KEYS[1] lock: hash (the lock name)
-- KEYS[2] token: fencing token counter
-- KEYS[3] queue: zset owner -> ticket
-- KEYS[4] waiters: waiter info: hash owner -> "<r|w>|<clientId>|<leaseMs>|<wakeAtMs>"
-- KEYS[5] deadlines: zset owner -> server ms
-- KEYS[6] holds: zset "r:<owner>" / "w:<owner>" -> server ms when the hold lapses
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: id
-- ARGV[3] mode: "try" (never queue), "wait" (queue if not acquired), "retry" (a queued waiter asking again)
-- ARGV[4] clientId: client id (names the waiter's wake channel)
-- ARGV[5] eligibleMs: ms the waiter stays eligible from now (its remaining wait, capped): its deadline
-- ARGV[6] heartbeatMs: heartbeat: the longest a queued waiter sleeps before asking again (ms)
-- ARGV[7] wakePrefix: wake channel prefix
-- ARGV[8] name: lock name, echoed in wake messages
-- ARGV[9] kind: "r" (read) or "w" (write)
-- Returns {1, token, holdCount, grantedMs} when acquired; {0, blockedMs, wakeInMs} when not (how long
-- the blocking holds may last, and when to ask again); {-1, 0, 0} for an upgrade (read -> write).
-- (QueuedCode in replies.ts: 1 Acquired, 0 Waiting, -1 UpgradeRefused.)
--- @include "rw-lib.lua"
local L = {lock = KEYS[1], holds = KEYS[6], token = KEYS[2]}
local Q, now = q_open(KEYS[3], KEYS[5], KEYS[4], ARGV[7], ARGV[8])
local lease = tonumber(ARGV[1])
local owner = ARGV[2]
local mode = ARGV[3]
local kind = ARGV[9]
local member = kind .. ':' .. owner
rw_purge(L, now)

local function granted()
  local held = redis.call('hget', L.lock, member)
  if not held then
    return nil
  end
  local token = tonumber(redis.call('hget', L.lock, 't:' .. member))
  return {1, token, tonumber(held), tonumber(redis.call('zscore', L.holds, member)) - now}
end

if redis.call('hexists', L.lock, member) == 1 then
  if mode == 'retry' then
    -- A queued waiter that finds itself holding was granted the lock and missed the message.
    return granted()
  end
  local count, token = rw_take(L, kind, owner, lease, now)
  return {1, token, count, lease}
end

if kind == 'w' and redis.call('hexists', L.lock, 'r:' .. owner) == 1 then
  return {-1, 0, 0}
end

-- The writer taking the read lock too never waits (the first step of a downgrade).
if kind == 'r' and redis.call('hget', L.lock, 'writer') == owner then
  local count, token = rw_take(L, kind, owner, lease, now)
  return {1, token, count, lease}
end

-- Holds that lapsed may have let queued waiters in; that may include the caller.
rw_settle(Q, L, now)
local mine = granted()
if mine then
  return mine
end

if not q_head(Q) and rw_can(L, kind, owner) then
  local count, token = rw_take(L, kind, owner, lease, now)
  return {1, token, count, lease}
end

local blocked = rw_blocked_ms(L, kind, now)
if mode == 'try' then
  return {0, blocked, 0}
end
local heartbeat = tonumber(ARGV[6])
local first = q_head(Q)
local wakeIn = heartbeat
if not first or first == owner then
  wakeIn = math.min(math.max(blocked, 1), heartbeat)
end
q_enqueue(Q, owner, kind, ARGV[4], lease, tonumber(ARGV[5]), now + wakeIn, now)
return {0, blocked, wakeIn}
