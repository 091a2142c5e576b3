-- The unlock latch of the lock library's release scripts (included by each): a release
-- request the client sends again (ioredis re-sends a command whose reply was lost) is answered from
-- the latch with the result it had, instead of counting a hold down twice.

-- The result an earlier run of this request had, or nil.
local function latch_get(key)
  local earlier = redis.call('get', key)
  return earlier and tonumber(earlier)
end

-- The latch of one release request: the result it already had (nil if none), and a function that
-- records a result for ttlMs and returns it.
local function unlock_latch(key, ttlMs)
  local earlier = latch_get(key)
  local function latch(result)
    redis.call('set', key, result, 'px', ttlMs)
    return result
  end
  return earlier, latch
end

-- One call for a release whose result is known before it acts: records `result` for ttlMs unless this
-- request already ran (SET NX GET, Redis 7), and returns the earlier result then, else nil.
local function latch_claim(key, result, ttlMs)
  local earlier = redis.call('set', key, result, 'nx', 'get', 'px', ttlMs)
  return earlier and tonumber(earlier)
end
