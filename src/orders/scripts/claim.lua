-- Claims units against a buyer's per-user limit, atomically: concurrent orders of one user on
-- different shards can never together pass the limit. A refused or failed order gives its claim back
-- with DECRBY.
--
-- KEYS[1] buyer:{P:userId}  units this user holds in this sale
-- ARGV[1] quantity to claim
-- ARGV[2] the sale's per-user limit
-- Returns the user's units after the claim, or -1 when it would pass the limit (nothing changed).
local after = redis.call('incrby', KEYS[1], ARGV[1])
if after > tonumber(ARGV[2]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return -1
end
return after
