-- The unlock latch of the lock library's release scripts (included by each): a release
-- request the client sends again (ioredis re-sends a command whose reply was lost) is answered from
-- the latch with the result it had, instead of counting a hold down twice.

-- The latch of one release request: the result it already had (nil if none), and a function that
-- records a result for ttlMs and returns it.
local function unlock_latch(key, ttlMs)
  local earlier = redis.call('get', key)
  local function latch(result)
    redis.call('set', key, result, 'px', ttlMs)
    return result
  end
  return earlier and tonumber(earlier), latch
end
