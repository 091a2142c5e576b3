-- Guarded, fenced decrement of one stock shard plus its reservation (the outbox), atomically in the
-- shard's slot. Refuses unless the caller holds the shard lock right now and its fencing token is not
-- older than the newest this shard has seen: a holder whose lease lapsed can never decrement.
--
-- Without an owner (ARGV[1] ""), the script takes the lock only for its own atomic run: if nobody
-- holds it, it draws the next fencing token and reserves, with no hold left behind (so no lease,
-- no release, no wake-up to publish); if anyone holds it (one of ours, an admin, a Redisson client)
-- it answers busy and writes nothing. That is the uncontended order in one script call instead of
-- acquire + reserve + release.
--
-- KEYS[1] lock: shard lock hash, stock:{P:g:i}:lock
-- KEYS[2] tokenCounter: the lock's token counter, flashsale_lock__token:stock:{P:g:i}:lock
-- KEYS[3] stock: stock:{P:g:i}
-- KEYS[4] fence: stock:{P:g:i}:fence, or stock:{P:g:i}:fence:<service> for an external lock service
-- KEYS[5] sold: stock:{P:g:i}:sold
-- KEYS[6] reservations: hash stock:{P:g:i}:res
-- ARGV[1] owner: owner id of the caller's hold, or "" to take the lock for this run only if free
-- ARGV[2] token: fencing token of the hold, or "" when acquired in the same pipeline (read from KEYS[2])
-- ARGV[3] quantity: integer > 0
-- ARGV[4] id: the reservation's id (field in the hash)
-- ARGV[5] entry: JSON object without its token, ending in "}" (the token is appended here)
-- ARGV[6] deadline: server time (ms) past which the reservation is refused; 0 = none
-- ARGV[7] startsAt: server time (ms) the sale opens at; 0 (or absent) = no bound
-- ARGV[8] endsAt: server time (ms) the sale closes at; 0 (or absent) = no bound
-- ARGV[9] fenced: "1" when the hold is on an external lock service (etcd, ZooKeeper): the lock is
--   not in Redis, so the token (ARGV[2], required) against the fence is the whole check; else absent
-- Idempotent per order id (a replayed call answers 1 again and changes nothing).
-- Returns {status, stockLeft, token}: status 1 reserved, 0 not enough stock in this shard,
-- -1 caller does not hold the lock, -2 stale fencing token, -3 shard retired by a reshard,
-- -4 past the deadline, -5 the sale has not opened, -6 the sale has closed, -7 the lock is held
-- (only without an owner).
-- ioredis sends a pipeline again after a reconnect when its replies were lost: the same order id
-- must not take stock twice, so an order already reserved answers as it did the first time, even
-- when the resent acquire found the lock taken by someone else meanwhile.
--- @include "../../redis/scripts/includes/server-time.lua"
local existing = redis.call('hget', KEYS[6], ARGV[4])
if existing then
  return {1, tonumber(redis.call('get', KEYS[3]) or '0'), cjson.decode(existing).token}
end
-- The deadline is what lets a client whose reply was lost learn the outcome: once the server's clock
-- is past it, this order id can no longer be reserved, so its absence is final.
local deadline = tonumber(ARGV[6])
local startsAt = tonumber(ARGV[7] or '0')
local endsAt = tonumber(ARGV[8] or '0')
if deadline > 0 or startsAt > 0 or endsAt > 0 then
  local now = now_ms()
  if deadline > 0 and now > deadline then
    return {-4, 0, 0}
  end
  -- The opening is judged by this one clock (Redis'), whatever the API processes' clocks say.
  if now < startsAt then
    return {-5, 0, 0}
  end
  if endsAt > 0 and now >= endsAt then
    return {-6, 0, 0}
  end
end
local token
if ARGV[9] == '1' then
  token = tonumber(ARGV[2])
  if not token then
    return {-1, 0, 0}
  end
elseif ARGV[1] == '' then
  if redis.call('exists', KEYS[1]) == 1 then
    return {-7, 0, 0}
  end
else
  if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return {-1, 0, 0}
  end
  token = tonumber(ARGV[2]) or tonumber(redis.call('get', KEYS[2]) or '0')
end
local values = redis.call('mget', KEYS[3], KEYS[4])
local stock = values[1]
if not stock then
  -- Checked before the fence so a late order leaves no key behind on a retired shard.
  return {-3, 0, token or 0}
end
stock = tonumber(stock)
local qty = tonumber(ARGV[3])
-- Drawn only now, so an order refused above (or too big for this shard) uses up no token.
if not token then
  if stock < qty then
    return {0, stock, 0}
  end
  token = redis.call('incr', KEYS[2])
end
local fence = tonumber(values[2] or '0')
if token < fence then
  return {-2, 0, token}
end
if token > fence then
  redis.call('set', KEYS[4], token)
end
if stock < qty then
  return {0, stock, token}
end
redis.call('decrby', KEYS[3], qty)
redis.call('incrby', KEYS[5], qty)
redis.call('hset', KEYS[6], ARGV[4], string.sub(ARGV[5], 1, -2) .. ',"token":' .. token .. '}')
return {1, stock - qty, token}
