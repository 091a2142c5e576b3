-- Journals an admin change in the product's slot before any of its shards is retired, and reserves
-- the number of the generation the change will create. The switch removes the journal in the same
-- script that makes that generation current, so a journal left behind means its admin died (or lost
-- Redis) mid-change; the next admin of the product finishes that change before its own.
--
-- KEYS[1] sale: sale hash sale:{P} (the journal is its `pending` field)
-- KEYS[2] adminLock: the product's admin lock, sale:{P}:admin
-- ARGV[1] owner: owner id of the admin's hold
-- ARGV[2] generation: the generation the change starts from (0 for a new sale)
-- ARGV[3] change: the change, JSON
-- Returns the reserved generation, or 0 (and writes nothing) when the caller no longer holds the
-- admin lock or another change switched the generation since the caller read it.
if redis.call('hexists', KEYS[2], ARGV[1]) == 0 then
  return 0
end
if tonumber(redis.call('hget', KEYS[1], 'gen') or '0') ~= tonumber(ARGV[2]) then
  return 0
end
local generation = redis.call('hincrby', KEYS[1], 'nextGen', 1)
redis.call('hset', KEYS[1], 'pending', ARGV[3])
return generation
