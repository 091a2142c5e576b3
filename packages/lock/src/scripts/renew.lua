-- Lease renewal (Redisson's watchdog script): extend the lease only if the owner still holds the lock.
-- The "held by one of ours" note follows the lock's lease: waiters keep trusting the hand-off, and read
-- the lock's TTL from it.
--
-- KEYS[1] lock: hash
-- KEYS[2] ours: "held by one of ours" note (see acquire.lua)
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] owner: id
-- Returns 1 when renewed, 0 when the owner no longer holds the lock. (RenewCode in replies.ts)
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('pexpire', KEYS[2], ARGV[1])
  return 1
end
return 0
