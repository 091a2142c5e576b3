-- Read-write lock release of one hold (read or write), with an unlock latch (a client retry of the same
-- request is answered from the latch, never counted twice). When a hold ends, queued waiters that can
-- now have the lock are granted it (rw-lib.lua rw_settle) and only their clients are told. Releasing
-- the write lock while holding the read lock leaves a read hold: the downgrade.
--
-- KEYS[1] lock: hash
-- KEYS[2] channel: Redisson unlock channel (published "0" when the lock ends with nobody queued)
-- KEYS[3] latch: unlock latch for this request
-- KEYS[4] token: fencing token counter
-- KEYS[5] queue: (see rw-acquire.lua)
-- KEYS[6] waiters: waiter info
-- KEYS[7] deadlines: deadlines
-- KEYS[8] holds: zset
-- ARGV[1] owner: id
-- ARGV[2] mode: "release"; "cancel" (a waiter giving up: leave the queue, and release a hold granted to
--         it meanwhile); "force" (end every hold)
-- ARGV[3] latchTtlMs: unlock latch ttl in ms
-- ARGV[4] wakePrefix: wake channel prefix
-- ARGV[5] name: lock name, echoed in wake messages
-- ARGV[6] kind: "r" or "w"
-- ARGV[7] sharded: "1" on a Redis Cluster (the unlock notice is an SPUBLISH), else ""
-- Returns nil when the owner does not hold that kind, 0 when holds of it remain, 1 when released.
-- (ReleaseCode in replies.ts: 0 HoldsRemain, 1 Released.)
--- @include "rw-lib.lua"
--- @include "unlock-notice.lua"
local owner = ARGV[1]
local mode = ARGV[2]
local member = ARGV[6] .. ':' .. owner

-- Before the owner check go only waiters past their deadlines (as at every acquire), lapsed holds (the
-- owner check must not count one), and in cancel mode the caller's own queue entry: nothing of another owner's.
local L = {lock = KEYS[1], holds = KEYS[8], token = KEYS[4]}
return q_release(KEYS[3], ARGV[3], KEYS[5], KEYS[7], KEYS[6], ARGV[4], ARGV[5], function(latch, Q, now)
  rw_purge(L, now)

  local function settle()
    rw_settle(Q, L, now)
    if redis.call('exists', L.lock) == 0 then
      publish_unlock(KEYS[2], ARGV[7])
    end
  end

  if mode == 'force' then
    if redis.call('exists', L.lock) == 0 then
      return nil
    end
    redis.call('del', L.lock, L.holds)
    settle()
    return 1
  end

  if mode == 'cancel' then
    q_remove(Q, owner)
  end

  local held = q_count_down(L.lock, member, nil, latch)
  if held == nil and mode == 'cancel' then
    rw_settle(Q, L, now)
  end
  if held ~= false then
    return held
  end
  rw_drop(L, member)
  rw_refresh(L, now)
  settle()
  return latch(1)
end)
