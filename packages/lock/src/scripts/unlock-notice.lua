-- Tells Redisson-style waiters that a lock is free: "0" on the lock's unlock channel. On a Redis
-- Cluster, Redisson 3.22+ waits with SSUBSCRIBE, so there the notice is an SPUBLISH (sharded = "1"),
-- which Redis allows in a script because the channel shares the lock's hash tag.
local function publish_unlock(channel, sharded)
  if sharded == '1' then
    redis.call('spublish', channel, 0)
  else
    redis.call('publish', channel, 0)
  end
end
