-- Withdraws one reservation from its shard: the exact reverse of reserve.lua's decrement (stock back,
-- sold down, entry gone), atomically in the shard's slot. The entry is the guard, so the units come
-- back once per entry, however often this runs (a retry, the writer and the sweeper after a failover).
--
-- KEYS[1] stock: stock:{P:g:i}
-- KEYS[2] sold: stock:{P:g:i}:sold
-- KEYS[3] reservations: hash stock:{P:g:i}:res
-- ARGV[1] id: the reservation's id (its order id)
-- Returns 1 given back now, 0 no such entry (given back before, or lost with a failed-over master),
-- -3 the shard is retired (its stock moved to a new generation: the units go back through the sale).
local entry = redis.call('hget', KEYS[3], ARGV[1])
if not entry then
  return 0
end
if redis.call('exists', KEYS[1]) == 0 then
  return -3
end
local quantity = tonumber(cjson.decode(entry).quantity)
redis.call('hdel', KEYS[3], ARGV[1])
redis.call('incrby', KEYS[1], quantity)
redis.call('decrby', KEYS[2], quantity)
return 1
