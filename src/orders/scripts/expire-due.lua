-- Expires the unpaid orders whose deadline (Redis' clock) has come, oldest first, at most `limit`:
-- each gets the fate "expired" and its units go to the sale's `returning`, in one atomic step with
-- the claim, so an order is expired at most once whoever sweeps (any API or worker process, several
-- at once, or again after a crash). An order paid or cancelled first is no longer in `due`.
--
-- KEYS[1] sale: sale hash sale:{P}
-- KEYS[2] final: hash orderId -> paid|expired|cancelled
-- KEYS[3] due: zset of unpaid orders by deadline (server ms)
-- KEYS[4] unpaid: hash orderId -> JSON {userId, quantity}
-- KEYS[5] settle: hash orderId -> JSON {status, userId, quantity, at}
-- ARGV[1] limit: most orders expired by this call
-- Returns {orders expired, units returned by them, units of the sale waiting to go back on sale}.
--- @include "../../redis/scripts/includes/fate.lua"
local k = {sale = KEYS[1], final = KEYS[2], due = KEYS[3], unpaid = KEYS[4], settle = KEYS[5]}
local now = now_ms()
local ids = redis.call('zrangebyscore', KEYS[3], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local orders, units = 0, 0
for _, id in ipairs(ids) do
  local info = redis.call('hget', KEYS[4], id)
  if redis.call('hexists', KEYS[2], id) == 1 or not info then
    -- Decided already (or never registered whole): nothing to expire, only a stale entry.
    redis.call('zrem', KEYS[3], id)
    redis.call('hdel', KEYS[4], id)
  else
    local o = cjson.decode(info)
    decide(k, id, 'expired', o.userId, tonumber(o.quantity), now)
    orders = orders + 1
    units = units + tonumber(o.quantity)
  end
end
return {orders, units, tonumber(redis.call('hget', KEYS[1], 'returning') or '0')}
