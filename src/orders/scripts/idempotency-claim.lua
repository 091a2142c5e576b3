-- Claims an Idempotency-Key for one order attempt, or tells who holds it: in one step, so a request
-- either owns the key or sees the record (claim or answer) of the request that does, together with
-- the server's clock to judge whether that claim's attempt is past its deadline.
--
-- KEYS[1] key: idem:{key}
-- ARGV[1] record: the claim record (JSON: fingerprint, attempt, deadline)
-- ARGV[2] ttlSeconds: TTL of the key
-- Returns {1, record, now} when claimed, {0, stored record, now} when the key was already taken
-- (now: server time in ms). A resent claim of the same attempt answers 0 with its own record.
--- @include "../../redis/scripts/includes/server-time.lua"
local now = now_ms()
local stored = redis.call('get', KEYS[1])
if stored then
  return {0, stored, now}
end
redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2])
return {1, ARGV[1], now}
