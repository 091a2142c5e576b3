-- Makes a new shard generation the product's current one: the product->shards list and the sale
-- hash change together, in the product's slot, so a reader never sees one without the other. The
-- change's journal (the sale hash's `pending` field, see journal.lua) ends in the same step: a
-- journal is left only by a change that never switched.
--
-- KEYS[1] sale: sale hash sale:{P} (its `pending` field is deleted on switching)
-- KEYS[2] shardList: the product->shards list, sale:{P}:shards
-- ARGV[1] generation: the new generation (must be newer than the current one)
-- ARGV[2] perUserLimit: 0 = none
-- ARGV[3] totalDelta: change of total (units added to or removed from sale)
-- ARGV[4] retiredSold: units sold by the shards being retired (moved into retiredSold)
-- ARGV[5] createdAt: creation time (ms), recorded when the sale is new
-- ARGV[6] startsAt: when orders open (server ms), "" = no bound
-- ARGV[7] endsAt: when orders close (server ms), "" = no bound
-- ARGV[8] paymentTimeoutSec: seconds an order has to be paid (0 = no payment needed)
-- ARGV[9] returningTaken: units of expired/cancelled orders the new generation puts back on sale
--   (taken off the sale hash's `returning`)
-- ARGV[10..] ...stockKeys: stock keys of the new generation, in index order
-- Returns 1 when switched, 0 when a newer generation is already current.
local current = tonumber(redis.call('hget', KEYS[1], 'gen') or '0')
if tonumber(ARGV[1]) <= current then
  return 0
end
redis.call('hset', KEYS[1], 'gen', ARGV[1], 'shards', #ARGV - 9, 'perUserLimit', ARGV[2], 'state', 'active',
  'paymentTimeoutSec', ARGV[8])
-- The window switches with the shards, so a process that reloads the sale sees both of one change.
for i, field in ipairs({'startsAt', 'endsAt'}) do
  if ARGV[5 + i] == '' then
    redis.call('hdel', KEYS[1], field)
  else
    redis.call('hset', KEYS[1], field, ARGV[5 + i])
  end
end
redis.call('hsetnx', KEYS[1], 'createdAt', ARGV[5])
redis.call('hincrby', KEYS[1], 'total', ARGV[3])
redis.call('hincrby', KEYS[1], 'retiredSold', ARGV[4])
if tonumber(ARGV[9]) > 0 then
  redis.call('hincrby', KEYS[1], 'returning', 0 - tonumber(ARGV[9]))
end
redis.call('hdel', KEYS[1], 'pending')
redis.call('del', KEYS[2])
redis.call('rpush', KEYS[2], unpack(ARGV, 10))
return 1
