-- Reentrant lock release (Redisson layout), with an unlock latch so a client retry of the same request
-- is answered from the latch instead of counting the hold down twice, and a direct hand-off: when the
-- hold reaches zero and one of our waiters is queued, the lock passes to the oldest live one and only
-- that waiter's client is told. With nobody queued it is deleted and "0" published on the Redisson
-- channel, which is what Redisson (Java) waiters listen for.
--
-- KEYS[1] lock: hash
-- KEYS[2] channel: Redisson unlock channel: redisson_lock__channel:{name}
-- KEYS[3] token: fencing token counter
-- KEYS[4] queue: waiter queue (zset waitId -> first-ask time)
-- KEYS[5] waiters: waiter info (hash waitId -> "<clientId>|<leaseMs>|<eligibleUntilMs>|<owner>")
-- KEYS[6] latch: unlock latch for this request
-- KEYS[7] handed: hand-offs not yet collected (hash waitId -> token)
-- KEYS[8] ours: "held by one of ours" flag
-- ARGV[1] owner: id
-- ARGV[2] leaseMs: lease in ms to keep while re-entry holds remain
-- ARGV[3] mode: "release"; "cancel" (wait ARGV[7] gives up: leave the queue, and release the lock only
--         if it was handed to that wait); "force" (delete whoever holds it)
-- ARGV[4] wakePrefix: wake channel prefix; the waiter's client id is appended
-- ARGV[5] latchTtlMs: unlock latch ttl in ms
-- ARGV[6] name: lock name, echoed in the wake message
-- ARGV[7] waitId: wait id the hold was handed to ('' when it was not a hand-off; required in cancel mode)
-- Returns nil when the owner does not hold the lock, 0 when holds remain, 1 when released.
--- @include "time.lua"
--- @include "latch.lua"
local owner = ARGV[1]
local mode = ARGV[3]

local latched, latch = unlock_latch(KEYS[6], ARGV[5])
if latched then
  return latched
end

local function handOff()
  local nowMs = now_ms()
  for _ = 1, 1000 do
    local head = redis.call('zpopmin', KEYS[4])
    if #head == 0 then
      return false
    end
    local wait = head[1]
    local info = redis.call('hget', KEYS[5], wait)
    redis.call('hdel', KEYS[5], wait)
    if info then
      local client, lease, eligibleUntil, next = string.match(info, '^(.-)|(%d+)|(%d+)|(.*)$')
      -- A waiter past its deadline has given up or died: skip it rather than park the lock on it.
      if client and tonumber(eligibleUntil) >= nowMs then
        redis.call('hincrby', KEYS[1], next, 1)
        redis.call('pexpire', KEYS[1], lease)
        redis.call('set', KEYS[8], 1, 'px', lease)
        local token = redis.call('incr', KEYS[3])
        redis.call('hset', KEYS[7], wait, token)
        redis.call('pexpire', KEYS[7], tonumber(lease) + 60000)
        redis.call('publish', ARGV[4] .. client, cjson.encode({ARGV[6], wait, token}))
        return true
      end
    end
  end
  return false
end

local function free()
  redis.call('del', KEYS[1], KEYS[8])
  if not handOff() then
    redis.call('publish', KEYS[2], 0)
  end
  return 1
end

if mode == 'force' then
  if redis.call('exists', KEYS[1]) == 0 then
    return nil
  end
  return latch(free())
end

if ARGV[7] ~= '' then
  -- The hold came by hand-off to wait ARGV[7]: its marker is no longer needed.
  local handed = redis.call('hdel', KEYS[7], ARGV[7])
  if mode == 'cancel' then
    redis.call('zrem', KEYS[4], ARGV[7])
    redis.call('hdel', KEYS[5], ARGV[7])
    -- Only a hold that was handed to this very wait is given back; the owner's other holds stay.
    if handed == 0 then
      return nil
    end
  end
end

if redis.call('hexists', KEYS[1], owner) == 0 then
  return nil
end
local count = redis.call('hincrby', KEYS[1], owner, -1)
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('pexpire', KEYS[8], ARGV[2])
  return latch(0)
end
return latch(free())
