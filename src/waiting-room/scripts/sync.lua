-- One API process's report to a product's waiting line, and the line after it. The line counts first
-- requests per time bucket (never per buyer: a waiting buyer costs Redis nothing of its own), and the
-- serving point walks through those counts by the capacity the processes report, so buyers are let
-- in in the order of their first request, and tickets whose holders left cost only their count.
--
-- KEYS[1] line: queue:{P}, hash: cur (bucket being served), used (buyers let in from it), rate
--   (buyers let in per second x 1000, smoothed), at (ms of the last report), started (1 once anyone
--   was let in), b<bucket> (first requests)
-- ARGV[1] arrivals: "<bucket>:<count>,..." first requests this process queued since its last report
-- ARGV[2] advance: buyers this process can take in now (its spare capacity since its last report)
-- ARGV[3] ttlSeconds: the line is forgotten this long after its last report
-- Returns {cur, used, rate, passed, bucket, count, bucket, count, ...}: passed, the buyers this report let
-- in (the process waits for them to come back), then the buckets from cur on; or {} when there is no line.
--- @include "../../redis/scripts/includes/server-time.lua"

local line = KEYS[1]
local now = now_ms()
local cur = tonumber(redis.call('hget', line, 'cur') or '-1')
local used = tonumber(redis.call('hget', line, 'used') or '0')

-- A line starts at its earliest report until it first lets someone in (a lottery's drawn places
-- arrive in any order); after that, a late report of a bucket already passed is simply let in.
local started = redis.call('hget', line, 'started') == '1'
for b, c in string.gmatch(ARGV[1], '(%d+):(%d+)') do
  b = tonumber(b)
  if cur < 0 or (b < cur and not started) then cur, used = b, 0 end
  if b >= cur then redis.call('hincrby', line, 'b' .. b, c) end
end
if cur < 0 then return {} end

local counts, buckets = {}, {}
local fields = redis.call('hgetall', line)
for i = 1, #fields, 2 do
  local name = fields[i]
  if string.sub(name, 1, 1) == 'b' then
    local b = tonumber(string.sub(name, 2))
    counts[b] = tonumber(fields[i + 1])
    buckets[#buckets + 1] = b
  end
end
table.sort(buckets)

local budget, passed = tonumber(ARGV[2]), 0
local rest = {}
for _, b in ipairs(buckets) do
  if b < cur then
    redis.call('hdel', line, 'b' .. b)
  elseif budget > 0 then
    if b > cur then cur, used = b, 0 end
    local left = counts[b] - used
    if budget >= left then
      budget, passed = budget - left, passed + left
      redis.call('hdel', line, 'b' .. b)
      cur, used = b + 1, 0
    else
      used, passed, budget = used + budget, passed + budget, 0
      rest[#rest + 1] = b
    end
  else
    rest[#rest + 1] = b
  end
end

local at = tonumber(redis.call('hget', line, 'at') or tostring(now))
local rate = tonumber(redis.call('hget', line, 'rate') or '0')
local elapsed = now - at
if elapsed > 0 then
  local weight = math.min(1, elapsed / 1000)
  rate = rate + (passed * 1000000 / elapsed - rate) * weight
end
redis.call('hset', line, 'cur', cur, 'used', used, 'rate', math.floor(rate), 'at', now)
if passed > 0 then redis.call('hset', line, 'started', '1') end
redis.call('expire', line, ARGV[3])

local reply = {cur, used, math.floor(rate), passed}
for i = 1, math.min(#rest, 4000) do
  reply[#reply + 1] = rest[i]
  reply[#reply + 1] = counts[rest[i]]
end
return reply
