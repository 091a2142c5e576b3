-- Settles an Idempotency-Key claim: stores the decided answer, or gives the claim up. Acts only while
-- the key is still the claim of this very attempt, so a resent or late settle can never overwrite or
-- drop a claim that another request holds.
--
-- KEYS[1] key: idem:{key}
-- ARGV[1] attempt: ticket of the attempt that claimed the key
-- ARGV[2] record: the record to store (keeping the key's TTL), or '' to delete the claim
-- Returns 1 if it acted, 0 if the key is gone or belongs to another attempt.
local raw = redis.call('get', KEYS[1])
if not raw then
  return 0
end
local ok, stored = pcall(cjson.decode, raw)
if not ok or type(stored) ~= 'table' or stored.attempt ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('del', KEYS[1])
else
  redis.call('set', KEYS[1], ARGV[2], 'KEEPTTL')
end
return 1
