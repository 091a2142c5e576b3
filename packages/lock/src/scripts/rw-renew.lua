-- Read-write lock renewal of one hold (the watchdog's and extend's script): sets that hold's lapse to
-- lease ms from now if the owner still holds it; the keys' TTL follows the latest hold.
--
-- KEYS[1] lock: hash
-- KEYS[2] holds: zset
-- ARGV[1] leaseMs: lease in ms
-- ARGV[2] hold: "r:<owner>" or "w:<owner>"
-- Returns 1 when renewed, 0 when that hold is gone. (RenewCode in replies.ts)
--- @include "rw-lib.lua"
local L = {lock = KEYS[1], holds = KEYS[2]}
local now = now_ms()
rw_purge(L, now)
if redis.call('hexists', L.lock, ARGV[2]) == 0 then
  return 0
end
redis.call('zadd', L.holds, now + tonumber(ARGV[1]), ARGV[2])
rw_refresh(L, now)
return 1
