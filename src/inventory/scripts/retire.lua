-- Retires a shard for a reshard: hands back its remaining stock and sold count and deletes both keys,
-- so an order that was waiting on this shard's lock finds it retired and moves to the new generation.
-- The reservation hash stays: its orders are still on their way to Postgres.
-- Admin changes use retire-recorded.lua, which keeps the numbers for a change whose admin dies.
--
-- KEYS[1] shard lock hash
-- KEYS[2] stock
-- KEYS[3] sold
-- ARGV[1] owner id of the admin's hold
-- Returns {status, stock, sold}: 1 retired, -1 caller does not hold the lock, -3 already retired.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {-1, 0, 0}
end
local stock = redis.call('get', KEYS[2])
if not stock then
  return {-3, 0, 0}
end
local sold = tonumber(redis.call('get', KEYS[3]) or '0')
redis.call('del', KEYS[2], KEYS[3])
return {1, tonumber(stock), sold}
