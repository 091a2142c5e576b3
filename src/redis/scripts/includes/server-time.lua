-- Redis' clock for the service's scripts (an include): now_ms() and now_ms_us(), so every deadline of
-- the service is judged by the Redis server's clock, never a client's (the lock package has its own).

-- The server's time in milliseconds and in microseconds.
local function now_ms_us()
  local t = redis.call('time')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

-- The server's time in milliseconds.
local function now_ms()
  return (now_ms_us())
end
