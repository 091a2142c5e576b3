-- A wait's queue entry of the reentrant lock (included by acquire.lua and release.lua): JSON
-- [waitId, clientId, leaseMs, eligibleMs, owner], eligibleMs counted from the entry's score (its first
-- ask). Built here from the parts, and only when a wait is queued or withdrawn, so that an acquire of
-- a free lock neither sends nor builds one. leaseMs and eligibleMs are integers as the client sent them,
-- so each ask and withdrawal of one wait builds the same bytes.
local function wait_entry(waitId, clientId, leaseMs, eligibleMs, owner)
  return '[' .. cjson.encode(waitId) .. ',' .. cjson.encode(clientId) .. ',' .. leaseMs .. ',' ..
    eligibleMs .. ',' .. cjson.encode(owner) .. ']'
end
