-- Read-write lock state library, included by rw-acquire.lua, rw-release.lua and rw-renew.lua;
-- no KEYS/ARGV of its own: the including script passes a table L built from its keys.
--   L.lock   hash  mode = "read" | "write"; writer = the write holder's owner id;
--                  "r:<owner>" / "w:<owner>" -> re-entry count; "t:r:<owner>" / "t:w:<owner>" -> the
--                  fencing token of that hold's latest acquisition
--   L.holds  zset  "r:<owner>" / "w:<owner>" -> server ms when that hold lapses: every hold has its own
--                  lease, so a reader whose process died stops counting after its lease even while
--                  other readers keep the lock alive (Redisson keeps such a reader's field forever)
--   L.token  fencing token counter (the reentrant lock's, so tokens stay monotonic per name)
-- Both L.lock and L.holds carry PEXPIRE = the latest lapse, so they vanish with the last hold.

--- @include "queue.lua"

-- After holds changed: key TTLs and mode follow the holds; no hold left deletes the lock.
local function rw_refresh(L, now)
  local last = redis.call('zrange', L.holds, -1, -1, 'WITHSCORES')
  if not last[2] then
    redis.call('del', L.lock, L.holds)
    return
  end
  local ttl = math.max(tonumber(last[2]) - now, 1)
  redis.call('pexpire', L.lock, ttl)
  redis.call('pexpire', L.holds, ttl)
  local writer = redis.call('hget', L.lock, 'writer')
  if writer and redis.call('hexists', L.lock, 'w:' .. writer) == 0 then
    redis.call('hdel', L.lock, 'writer')
    writer = false
  end
  if writer then
    redis.call('hset', L.lock, 'mode', 'write')
  else
    redis.call('hset', L.lock, 'mode', 'read')
  end
end

local function rw_drop(L, member)
  redis.call('hdel', L.lock, member, 't:' .. member)
  redis.call('zrem', L.holds, member)
end

-- Drops the holds whose lease has lapsed.
local function rw_purge(L, now)
  local gone = redis.call('zrangebyscore', L.holds, '-inf', '(' .. now)
  if #gone == 0 then
    return
  end
  for _, member in ipairs(gone) do
    rw_drop(L, member)
  end
  rw_refresh(L, now)
end

-- One more hold of kind ('r' or 'w') by owner, lapsing ms from now (re-entry never shortens a hold).
-- Returns the re-entry count and the new fencing token.
local function rw_take(L, kind, owner, ms, now)
  local member = kind .. ':' .. owner
  local count = redis.call('hincrby', L.lock, member, 1)
  local token = redis.call('incr', L.token)
  redis.call('hset', L.lock, 't:' .. member, token)
  local old = tonumber(redis.call('zscore', L.holds, member) or 0)
  redis.call('zadd', L.holds, math.max(old, now + ms), member)
  if kind == 'w' then
    redis.call('hset', L.lock, 'writer', owner)
  end
  rw_refresh(L, now)
  return count, token
end

-- Whether owner could take kind now, as far as the holds go (the queue is the caller's business).
local function rw_can(L, kind, owner)
  local mode = redis.call('hget', L.lock, 'mode')
  if kind == 'w' then
    return not mode
  end
  return mode ~= 'write' or redis.call('hget', L.lock, 'writer') == owner
end

-- How long until the holds that block kind may lapse: a writer waits for every hold, a reader for the
-- write hold.
local function rw_blocked_ms(L, kind, now)
  if kind == 'w' then
    local last = redis.call('zrange', L.holds, -1, -1, 'WITHSCORES')
    if not last[2] then
      return 0
    end
    return tonumber(last[2]) - now
  end
  local writer = redis.call('hget', L.lock, 'writer')
  if not writer then
    return 0
  end
  local lapse = redis.call('zscore', L.holds, 'w:' .. writer)
  if not lapse then
    return 0
  end
  return tonumber(lapse) - now
end

-- Grants the lock to the queue's head while the head can have it: a writer when nothing is held, then
-- nobody else; readers one after another while no writer holds. A queued writer ends a run of readers,
-- so readers that came after it wait behind it: new readers can never starve a waiting writer. The
-- head left waiting gets a timer hint when needed. Returns true when anyone was granted.
local function rw_settle(Q, L, now)
  local granted = false
  while true do
    local head = q_head(Q)
    if not head then
      break
    end
    local w = parse_info(redis.call('hget', Q.info, head))
    if w and not rw_can(L, w.kind, head) then
      q_wake_head(Q, rw_blocked_ms(L, w.kind, now), now)
      break
    end
    local g = q_pop_grant(Q, head, now)
    if g then
      local _, token = rw_take(L, g.kind, head, g.grantMs, now)
      q_tell_grant(Q, head, g, token)
      granted = true
    end
  end
  return granted
end
