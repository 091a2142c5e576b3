-- Waiter queue library of the fair, read-write and multi-master lock scripts (included; no KEYS/ARGV of
-- its own: the including script passes a table Q built from its keys and arguments). Keys, all under the
-- lock's hash tag:
--   Q.queue     zset  owner -> ticket: the order of first asks (a waiter asking again keeps its ticket)
--   Q.deadlines zset  owner -> server ms after which the waiter counts as gone. Each waiter's own wait,
--                     set from the server's TIME when it asks: a waiter that dies is dropped at its own
--                     deadline, and nobody else's deadline moves (no accumulation as in Redisson)
--   Q.info      hash  owner -> "<kind>|<clientId>|<leaseMs>|<wakeAtMs>": what a grant needs, and when
--                     the waiter's own timer makes it ask again (server ms)
--   Q.wake      wake channel prefix (a waiter's client id is appended); Q.name the lock name
-- Wake messages (JSON): grant [name, owner, token, grantedMs]; head hint [name, owner, "head", ms].

--- @include "time.lua"
--- @include "latch.lua"

-- How long past its deadline a waiter may still hold a grant: time to confirm it (see q_pop_grant).
local GRANT_GRACE_MS = 100

local function parse_info(info)
  if not info then
    return nil
  end
  local kind, client, lease, wakeAt = string.match(info, '^(%a)|(.*)|(%d+)|(%-?%d+)$')
  if not kind then
    return nil
  end
  return {kind = kind, client = client, lease = tonumber(lease), wakeAt = tonumber(wakeAt)}
end

local function format_info(w)
  return w.kind .. '|' .. w.client .. '|' .. w.lease .. '|' .. w.wakeAt
end

local function q_remove(Q, owner)
  redis.call('zrem', Q.queue, owner)
  redis.call('zrem', Q.deadlines, owner)
  redis.call('hdel', Q.info, owner)
end

-- Drops the waiters whose own deadline has passed: they gave up or died.
local function q_purge(Q, now)
  local gone = redis.call('zrangebyscore', Q.deadlines, '-inf', '(' .. now, 'LIMIT', 0, 1000)
  for _, owner in ipairs(gone) do
    q_remove(Q, owner)
  end
end

-- A lock's queue (its keys, the wake channel prefix, the lock's name) as of now, its dead waiters
-- purged: where every script of a queued lock begins.
local function q_open(queue, deadlines, info, wake, name)
  local Q = {queue = queue, deadlines = deadlines, info = info, wake = wake, name = name}
  local now = now_ms()
  q_purge(Q, now)
  return Q, now
end

-- Every queued kind's release: when this request already ran (its latch is set), the result it had and
-- nothing else; else body(latch, Q, now) with the request's latch (see latch.lua) and the queue opened.
-- The release's body is a function so that this early return is written once, here.
local function q_release(latchKey, latchTtlMs, queue, deadlines, info, wake, name, body)
  local latched, latch = unlock_latch(latchKey, latchTtlMs)
  if latched then
    return latched
  end
  local Q, now = q_open(queue, deadlines, info, wake, name)
  return body(latch, Q, now)
end

-- One hold of `field` counted down in the lock hash: nil when it holds none; latch(0) when holds remain
-- (the lease renewed to leaseMs, when given); false when that was its last hold, for the caller to free.
local function q_count_down(lock, field, leaseMs, latch)
  if redis.call('hexists', lock, field) == 0 then
    return nil
  end
  if redis.call('hincrby', lock, field, -1) <= 0 then
    return false
  end
  if leaseMs then
    redis.call('pexpire', lock, leaseMs)
  end
  return latch(0)
end

local function q_head(Q)
  return redis.call('zrange', Q.queue, 0, 0)[1]
end

-- When a waiter should ask again: at its heartbeat, or sooner when it is (or will be) the head and the
-- holder's lease (pttl ms; negative: none) may lapse first.
local function q_wake_in(Q, owner, pttl, heartbeat)
  local first = q_head(Q)
  if (not first or first == owner) and pttl >= 0 then
    return math.min(math.max(pttl, 1), heartbeat)
  end
  return heartbeat
end

-- Queues owner behind everyone already queued, or keeps its place if it is queued; renews its deadline.
local function q_enqueue(Q, owner, kind, client, lease, eligibleMs, wakeAt, now)
  if not redis.call('zscore', Q.queue, owner) then
    local last = redis.call('zrange', Q.queue, -1, -1, 'WITHSCORES')
    local ticket = 1
    if last[2] then
      ticket = tonumber(last[2]) + 1
    end
    redis.call('zadd', Q.queue, ticket, owner)
  end
  redis.call('zadd', Q.deadlines, now + eligibleMs, owner)
  redis.call('hset', Q.info, owner, format_info({kind = kind, client = client, lease = lease, wakeAt = wakeAt}))
  local keep = eligibleMs + 60000
  for _, key in ipairs({Q.queue, Q.deadlines, Q.info}) do
    if redis.call('pttl', key) < keep then
      redis.call('pexpire', key, keep)
    end
  end
end

-- The head must ask again by the time what blocks it may lapse without a release (a holder that died,
-- a grant to a waiter that died): when its own timer is set later than that, send it a hint. Only the
-- head is ever told; everyone behind it sleeps until its heartbeat.
local function q_wake_head(Q, blockedMs, now)
  if blockedMs < 0 then
    return
  end
  local head = q_head(Q)
  if not head then
    return
  end
  local w = parse_info(redis.call('hget', Q.info, head))
  if not w then
    return
  end
  local due = now + math.max(blockedMs, 1)
  if w.wakeAt > due then
    w.wakeAt = due
    redis.call('hset', Q.info, head, format_info(w))
    redis.call('publish', Q.wake .. w.client, cjson.encode({Q.name, head, 'head', blockedMs}))
  end
end

-- Takes owner (the live head) out of the queue for a grant. The grant lasts the waiter's lease, cut to
-- its deadline plus a grace: a waiter that died while queued holds the lock no longer than it would
-- have waited; a live one confirms (tops up) a short grant as soon as it hears of it.
local function q_pop_grant(Q, owner, now)
  local w = parse_info(redis.call('hget', Q.info, owner))
  local deadline = tonumber(redis.call('zscore', Q.deadlines, owner))
  q_remove(Q, owner)
  if not w or not deadline then
    return nil
  end
  w.grantMs = math.min(w.lease, math.max(deadline - now, 0) + GRANT_GRACE_MS)
  return w
end

local function q_tell_grant(Q, owner, w, token)
  redis.call('publish', Q.wake .. w.client, cjson.encode({Q.name, owner, token, w.grantMs}))
end

-- Exclusive lock in Redisson's hash layout (the fair lock): a free lock goes to the oldest live waiter.
-- Returns true when it was granted.
local function q_grant_hash(Q, lock, tokenKey, now)
  while true do
    local head = q_head(Q)
    if not head then
      return false
    end
    local w = q_pop_grant(Q, head, now)
    if w then
      redis.call('hset', lock, head, 1)
      redis.call('pexpire', lock, w.grantMs)
      q_tell_grant(Q, head, w, redis.call('incr', tokenKey))
      return true
    end
  end
end
