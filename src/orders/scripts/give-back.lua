-- Gives back the units an order attempt claimed against a buyer's limit, once: the claim's record
-- is deleted with it, so a second give-back of the same attempt (a resend, or a retry that resolved
-- the attempt as well) changes nothing, and an attempt that never claimed gives nothing back.
--
-- KEYS[1] count: buyer:{P:userId}, units this user holds in this sale
-- KEYS[2] claims: buyer:{P:userId}:claims, hash: attempt ticket -> units it claimed
-- ARGV[1] ticket: ticket of the order attempt
-- Returns the units given back (0 when the attempt holds no claim).
local units = redis.call('hget', KEYS[2], ARGV[1])
if not units then
  return 0
end
redis.call('hdel', KEYS[2], ARGV[1])
-- A count back at zero is deleted: a refused order leaves no key behind (no request can fill Redis).
if redis.call('decrby', KEYS[1], units) <= 0 then
  redis.call('del', KEYS[1])
end
return tonumber(units)
