-- Shared by the orders' pay-or-cancel.lua and expire-due.lua (an include): writes an unpaid order's
-- fate, the one step after which it is paid for good or its units are on their way back on sale.
-- The caller has checked that the order has no fate yet. Every key is in the product's slot.
--- @include "server-time.lua"

-- k: {sale, final, due, unpaid, settle}; status: 'paid' | 'expired' | 'cancelled'.
local function decide(k, orderId, status, userId, quantity, now)
  redis.call('hset', k.final, orderId, status)
  redis.call('zrem', k.due, orderId)
  redis.call('hdel', k.unpaid, orderId)
  redis.call('hincrby', k.sale, status, 1)
  if status ~= 'paid' then
    -- No longer sold; waiting for the next return change (SaleAdmin.returnUnits) to be on sale again.
    redis.call('hincrby', k.sale, 'returned', quantity)
    redis.call('hincrby', k.sale, 'returning', quantity)
  end
  -- The outbox towards Postgres (status, history) and the buyer's per-user claim.
  redis.call('hset', k.settle, orderId,
    cjson.encode({status = status, userId = userId, quantity = quantity, at = now}))
end
