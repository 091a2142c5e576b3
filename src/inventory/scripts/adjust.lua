-- Admin change of one shard's stock by a delta (restock, or a negative correction), guarded like the
-- order decrement: only the holder of the shard lock may change it, and never below zero.
--
-- KEYS[1] shard lock hash
-- KEYS[2] stock
-- ARGV[1] owner id of the admin's hold
-- ARGV[2] delta (integer, may be negative)
-- Returns {status, stock}: 1 applied (stock after), 0 would go below zero (stock unchanged),
-- -1 caller does not hold the lock, -3 shard retired.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {-1, 0}
end
local stock = redis.call('get', KEYS[2])
if not stock then
  return {-3, 0}
end
local after = tonumber(stock) + tonumber(ARGV[2])
if after < 0 then
  return {0, tonumber(stock)}
end
redis.call('set', KEYS[2], after)
return {1, after}
