-- idem_complete.lua: stores the receipt of an idempotency key reserved by
-- a token (mail/idempotency Store.Complete). Not prefixed with common.lua.
--
-- KEYS[1] -> the key's entry: "R" .. token while reserved, "C" .. JSON
--            {"token", "receipt"} once completed
-- ARGV[1] -> the token of the reservation
-- ARGV[2] -> the completed entry to store ("C" .. JSON)
-- ARGV[3] -> how long to keep it, in ms
--
-- Returns: 1 when stored; 0 when the key is not reserved by the token (its
-- reservation ran out, another run holds it, or it is completed already):
-- nothing changed.

if redis.call('GET', KEYS[1]) ~= 'R' .. ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
