-- Retires a shard for an admin change and records what it handed back. The stock and sold keys go,
-- so an order waiting on this shard finds it retired and moves to the new generation; their numbers
-- stay in the shard's retired marker. An admin that dies between this and the switch therefore
-- loses nothing: whoever finishes its change retires the shard again and is answered the same
-- numbers, and only one switch can use them (it refuses a generation that is not newer).
-- The reservation hash stays: its orders are still on their way to Postgres.
--
-- KEYS[1] lock: shard lock hash; with an external lock service (ARGV[2] given) the shard's fence key
--   for that service instead (stock:{P:g:i}:fence:<service>)
-- KEYS[2] stock: stock:{P:g:i}
-- KEYS[3] sold: stock:{P:g:i}:sold
-- KEYS[4] retired: the retired marker, JSON {stock, sold}, deleted when the retired shard is pruned
-- ARGV[1] owner: owner id of the admin's hold
-- ARGV[2] token?: fencing token of the admin's hold on an external lock service (etcd, ZooKeeper);
--   absent with Redis locks. Refused when older than the fence; the fence then moves up to it, so
--   an order whose hold lapsed meanwhile can no longer reserve here
-- Returns {status, stock, sold}: 1 retired now; -3 already retired, with the recorded numbers
-- (0, 0 for a shard retired before markers existed); -1 caller does not hold the lock.
if ARGV[2] then
  local token = tonumber(ARGV[2])
  if token < tonumber(redis.call('get', KEYS[1]) or '0') then
    return {-1, 0, 0}
  end
  redis.call('set', KEYS[1], token)
elseif redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {-1, 0, 0}
end
local stock = redis.call('get', KEYS[2])
if not stock then
  local recorded = redis.call('get', KEYS[4])
  if not recorded then
    return {-3, 0, 0}
  end
  local r = cjson.decode(recorded)
  return {-3, r.stock, r.sold}
end
local sold = tonumber(redis.call('get', KEYS[3]) or '0')
redis.call('set', KEYS[4], cjson.encode({stock = tonumber(stock), sold = sold}))
redis.call('del', KEYS[2], KEYS[3])
return {1, tonumber(stock), sold}
