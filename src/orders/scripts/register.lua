-- Registers an order of a sale with a payment deadline for expiry: its deadline in `due` and what it
-- holds in `unpaid`. Safe to run any number of times (API on acceptance, writer and sweeper as
-- backstops): an order that already has a fate (paid, expired, cancelled) is never registered again,
-- so a late registration cannot bring back an order that was decided.
--
-- KEYS[1] final: hash orderId -> paid|expired|cancelled
-- KEYS[2] due: zset of unpaid orders by deadline (server ms)
-- KEYS[3] unpaid: hash orderId -> JSON {userId, quantity}
-- ARGV[1] orderId: the order
-- ARGV[2] payBy: its deadline (server ms)
-- ARGV[3] userId: its buyer
-- ARGV[4] quantity: its units
-- Returns 1 registered now, 0 registered before or already decided.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  return 0
end
if redis.call('zadd', KEYS[2], 'NX', ARGV[2], ARGV[1]) == 0 then
  return 0
end
redis.call('hset', KEYS[3], ARGV[1], cjson.encode({userId = ARGV[3], quantity = tonumber(ARGV[4])}))
return 1
