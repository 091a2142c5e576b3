-- Claims units against a buyer's per-user limit, atomically: concurrent orders of one user on
-- different shards can never together pass the limit. Each claim is recorded under the ticket of the
-- order attempt that made it, so giving it back (give-back.lua) happens at most once, and a replayed
-- claim (ioredis resends a command whose reply was lost) counts once.
--
-- KEYS[1] count: buyer:{P:userId}, units this user holds in this sale
-- KEYS[2] claims: buyer:{P:userId}:claims, hash: attempt ticket -> units it claimed
-- ARGV[1] quantity: units to claim
-- ARGV[2] limit: the sale's per-user limit
-- ARGV[3] ticket: ticket of the order attempt
-- ARGV[4] ttlSeconds: how long the claims hash is kept (refreshed by every claim)
-- ARGV[5] countTtlSeconds: how long the count is kept (refreshed by every claim): no key is forever
-- Returns the user's units after the claim, or -1 when it would pass the limit (nothing changed).
if redis.call('hexists', KEYS[2], ARGV[3]) == 1 then
  return tonumber(redis.call('get', KEYS[1]) or '0')
end
local after = redis.call('incrby', KEYS[1], ARGV[1])
if after > tonumber(ARGV[2]) then
  -- Refused: nothing stays behind, not even a zero count (no request can fill Redis).
  if redis.call('decrby', KEYS[1], ARGV[1]) <= 0 then
    redis.call('del', KEYS[1])
  end
  return -1
end
redis.call('hset', KEYS[2], ARGV[3], ARGV[1])
redis.call('expire', KEYS[2], ARGV[4])
redis.call('expire', KEYS[1], ARGV[5])
return after
