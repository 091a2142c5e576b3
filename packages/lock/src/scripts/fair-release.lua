-- Fair lock release, with the reentrant release's unlock latch (a client retry of the same request is
-- answered from the latch, never counted twice). When the hold reaches zero the lock goes straight to
-- the oldest live waiter (queue.lua) and only that waiter's client is told; the next waiter gets a
-- timer hint only if its own timer would fire after that grant could lapse. With nobody queued the
-- lock is deleted and "0" published on the Redisson channel.
--
-- KEYS[1] lock: hash
-- KEYS[2] channel: Redisson unlock channel: redisson_lock__channel:{name}
-- KEYS[3] latch: unlock latch for this request
-- KEYS[4] token: fencing token counter
-- KEYS[5] queue: (see fair-acquire.lua)
-- KEYS[6] waiters: waiter info
-- KEYS[7] deadlines: deadlines
-- ARGV[1] owner: id
-- ARGV[2] mode: "release"; "cancel" (a waiter giving up: leave the queue, and release a lock granted to
--         it meanwhile); "force" (delete whoever holds it)
-- ARGV[3] latchTtlMs: unlock latch ttl in ms
-- ARGV[4] wakePrefix: wake channel prefix
-- ARGV[5] name: lock name, echoed in wake messages
-- ARGV[6] leaseMs: lease in ms to keep while re-entry holds remain
-- ARGV[7] sharded: "1" on a Redis Cluster (the unlock notice is an SPUBLISH), else ""
-- Returns nil when the owner does not hold the lock, 0 when holds remain, 1 when released.
-- (ReleaseCode in replies.ts: 0 HoldsRemain, 1 Released.)
--- @include "queue.lua"
--- @include "unlock-notice.lua"
local owner = ARGV[1]
local mode = ARGV[2]

-- Before the owner check only waiters past their deadlines go (as at every acquire), and in cancel
-- mode the caller's own queue entry: nothing of another owner's.
return q_release(KEYS[3], ARGV[3], KEYS[5], KEYS[7], KEYS[6], ARGV[4], ARGV[5], function(latch, Q, now)
  -- A free lock goes to the oldest live waiter; returns false when nobody took it.
  local function settle()
    if redis.call('exists', KEYS[1]) == 0 and not q_grant_hash(Q, KEYS[1], KEYS[4], now) then
      return false
    end
    q_wake_head(Q, redis.call('pttl', KEYS[1]), now)
    return true
  end

  local function free()
    redis.call('del', KEYS[1])
    return pass_on_or_notify(settle, KEYS[2], ARGV[7])
  end

  if mode == 'force' then
    if redis.call('exists', KEYS[1]) == 0 then
      return nil
    end
    return free()
  end

  if mode == 'cancel' then
    q_remove(Q, owner)
  end

  local held = q_count_down(KEYS[1], owner, ARGV[6], latch)
  if held == nil and mode == 'cancel' then
    settle()
  end
  if held ~= false then
    return held
  end
  return latch(free())
end)
