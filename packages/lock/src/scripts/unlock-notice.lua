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

-- A lock its release just deleted: handed to one of our waiters (`hand_off()` true when one took it),
-- else the unlock notice goes out. Returns 1, the release's "released".
local function pass_on_or_notify(hand_off, channel, sharded)
  if not hand_off() then
    publish_unlock(channel, sharded)
  end
  return 1
end
