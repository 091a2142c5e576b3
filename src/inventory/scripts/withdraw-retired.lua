-- Gives a withdrawn order's units back to its sale when its shard was retired meanwhile (the retire
-- counted them as sold): they wait in `returning` for the next return change, like a cancelled
-- order's. Once per order id (`withdrawn` remembers it), in the product's slot.
--
-- KEYS[1] sale: sale hash sale:{P} (counters returned, returning)
-- KEYS[2] withdrawn: hash sale:{P}:withdrawn, orderId -> units given back
-- ARGV[1] orderId: the withdrawn order
-- ARGV[2] quantity: its units
-- Returns 1 given back now, 0 given back before.
if redis.call('hsetnx', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  return 0
end
-- The guard outlives any reservation that could still come back (a failover brings one back at
-- once); the expiry sweep finds the product by this key and puts the units back on sale.
redis.call('expire', KEYS[2], 7 * 24 * 3600)
redis.call('hincrby', KEYS[1], 'returned', ARGV[2])
redis.call('hincrby', KEYS[1], 'returning', ARGV[2])
return 1
