-- idem_release.lua: deletes the reservation of an idempotency key held by
-- a token and not completed (mail/idempotency Store.Release). Not prefixed
-- with common.lua.
--
-- KEYS[1] -> the key's entry: "R" .. token while reserved
-- ARGV[1] -> the token of the reservation
--
-- Returns: 1 when deleted; 0 when the key is not reserved by the token or
-- is completed: nothing changed.

if redis.call('GET', KEYS[1]) ~= 'R' .. ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
