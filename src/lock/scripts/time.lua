-- Server time helpers for the lock scripts (an include): every deadline and lapse is
-- counted on the Redis server's clock, never a client's.

-- The server's time in milliseconds.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
