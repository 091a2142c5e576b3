-- Multi-master lock: release, roll back or withdraw on one master (reentrant lock layout). When the
-- lock here becomes free, it is reserved for a moment for the oldest queued waiter, which alone is
-- woken (a "head" hint with 0 ms on its client's channel). If that waiter is gone, the reservation
-- lapses and the next waiter to ask (at its heartbeat) takes the lock; a gone waiter is dropped at its
-- deadline. Nobody queued: "0" on the Redisson channel.
-- The unlock latch is written only when holds remain, where a replayed request would count down twice;
-- a release that ends the hold leaves no key of the owner behind.
--
-- KEYS[1] lock: hash (the lock name)
-- KEYS[2] channel: Redisson unlock channel: redisson_lock__channel:{name}
-- KEYS[3] latch: unlock latch for this request
-- KEYS[4] queue: (see redlock-acquire.lua)
-- KEYS[5] waiters: waiter info
-- KEYS[6] deadlines: deadlines
-- KEYS[7] reservation: reservation
-- ARGV[1] owner: id
-- ARGV[2] mode: "release" (and leave the queue); "rollback" (undo a refused round, keep the queue
--         place; a waiter that is itself the head wakes nobody: it asks again on its own);
--         "cancel" (a waiter giving up: leave the queue, pass on a reservation held for it)
-- ARGV[3] latchTtlMs: unlock latch ttl in ms
-- ARGV[4] wakePrefix: wake channel prefix
-- ARGV[5] name: lock name, echoed in wake messages
-- ARGV[6] leaseMs: lease in ms to keep while re-entry holds remain
-- ARGV[7] reservationMs: reservation in ms
-- Returns nil when the owner does not hold the lock here, 0 when holds remain, 1 when released.
-- (ReleaseCode in replies.ts: 0 HoldsRemain, 1 Released.)
--- @include "queue.lua"
local owner = ARGV[1]
local mode = ARGV[2]

-- Before the owner check only waiters past their deadlines go (as at every acquire), and the caller's
-- own queue entry (a round may have queued it on a master that did not grant): nothing of another owner's.
return q_release(KEYS[3], ARGV[3], KEYS[4], KEYS[6], KEYS[5], ARGV[4], ARGV[5], function(latch, Q, now)
  if mode ~= 'rollback' then
    q_remove(Q, owner)
  end

  -- The lock is free here: keep it for the oldest waiter for a moment and wake only that waiter.
  local function pass_on()
    local head = q_head(Q)
    if not head then
      redis.call('del', KEYS[7])
      redis.call('publish', KEYS[2], 0)
      return
    end
    if head == owner then
      return
    end
    local w = parse_info(redis.call('hget', Q.info, head))
    if not w then
      q_remove(Q, head)
      return pass_on()
    end
    local reserveMs = tonumber(ARGV[7])
    redis.call('set', KEYS[7], head, 'px', reserveMs)
    w.wakeAt = now
    redis.call('hset', Q.info, head, format_info(w))
    redis.call('publish', Q.wake .. w.client, cjson.encode({Q.name, head, 'head', 0}))
  end

  local held = q_count_down(KEYS[1], owner, ARGV[6], latch)
  if held == nil and mode == 'cancel' and redis.call('exists', KEYS[1]) == 0 and redis.call('get', KEYS[7]) == owner then
    redis.call('del', KEYS[7])
    pass_on()
  end
  if held ~= false then
    return held
  end
  redis.call('del', KEYS[1])
  pass_on()
  return 1
end)
