-- Pays or cancels one order: the single place where pay and expire/cancel race, decided atomically in
-- the product's slot. An order gets one fate, once (`final`); asking again answers that fate. Paying
-- at or after the order's deadline (Redis' clock) expires it instead, so "paid" and "expired" can
-- never both happen, whoever comes first: the expiry sweep or a late payment.
--
-- KEYS[1] sale: sale hash sale:{P} (counters paid/expired/cancelled, returned, returning)
-- KEYS[2] final: hash orderId -> paid|expired|cancelled
-- KEYS[3] due: zset of unpaid orders by deadline (server ms)
-- KEYS[4] unpaid: hash orderId -> JSON {userId, quantity}
-- KEYS[5] settle: hash orderId -> JSON {status, userId, quantity, at} (decisions not yet in Postgres)
-- ARGV[1] orderId: the order (its existence and owner are checked by the caller)
-- ARGV[2] action: "pay" or "cancel"
-- ARGV[3] payBy: the order's deadline (server ms), 0 = none
-- ARGV[4] userId: the order's buyer
-- ARGV[5] quantity: the order's units
-- Returns one code: 1 paid now, 2 cancelled now, 3 expired now (paid too late), -1 already paid,
-- -2 already cancelled, -3 already expired.
--- @include "../../redis/scripts/includes/fate.lua"
local was = redis.call('hget', KEYS[2], ARGV[1])
if was == 'paid' then
  return -1
elseif was == 'cancelled' then
  return -2
elseif was == 'expired' then
  return -3
end
local k = {sale = KEYS[1], final = KEYS[2], due = KEYS[3], unpaid = KEYS[4], settle = KEYS[5]}
local now = now_ms()
local quantity = tonumber(ARGV[5])
if ARGV[2] == 'cancel' then
  decide(k, ARGV[1], 'cancelled', ARGV[4], quantity, now)
  return 2
end
local payBy = tonumber(ARGV[3])
if payBy > 0 and now >= payBy then
  decide(k, ARGV[1], 'expired', ARGV[4], quantity, now)
  return 3
end
decide(k, ARGV[1], 'paid', ARGV[4], quantity, now)
return 1
