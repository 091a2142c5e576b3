-- Multi-master lock: raises this master's fencing-token counter to a round's token, never lowering it.
-- The token of a round is the largest counter among the masters that granted it; raising the others
-- to it means any later majority (which shares a master with this one) counts past that token.
--
-- KEYS[1] counter: fencing token counter of this master
-- ARGV[1] token: the round's token
-- Returns the counter after the raise (at least the token).
local current = tonumber(redis.call('get', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if current < token then
  redis.call('set', KEYS[1], token)
  return token
end
return current
