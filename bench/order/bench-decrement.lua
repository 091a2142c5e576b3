-- BENCHMARK ONLY (POST /bench/unlocked, mounted only by bench/order/bench-api.ts): the stock work of
-- reserve.lua without its guard — no lock ownership check, no fencing token. It is the ceiling the
-- guarded path (acquire + reserve.lua + release in one pipeline) is measured against. Never use it
-- to sell: nothing excludes a concurrent reshard.
--
-- KEYS[1] stock: stock:{P:g:i}
-- KEYS[2] sold: stock:{P:g:i}:sold
-- KEYS[3] reservations: stock:{P:g:i}:res
-- ARGV[1] quantity: integer > 0
-- ARGV[2] id: the order id
-- ARGV[3] entry: the order's JSON (complete, token 0)
-- Returns {status, stockLeft}: status 1 reserved, 0 not enough stock in this shard, -3 shard retired.
local stock = redis.call('get', KEYS[1])
if not stock then
  return {-3, 0}
end
stock = tonumber(stock)
local qty = tonumber(ARGV[1])
if stock < qty then
  return {0, stock}
end
redis.call('decrby', KEYS[1], qty)
redis.call('incrby', KEYS[2], qty)
redis.call('hset', KEYS[3], ARGV[2], ARGV[3])
return {1, stock - qty}
