-- extend.lua: moves the end of a lease to now + a duration, fenced by the
-- lease token.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the job's id
-- ARGV[8] -> the lease token
-- ARGV[9] -> the new length of the lease from now, in ms
--
-- Returns: 1 when extended; 0 when the token is not that of the job's
-- current lease, the lease ran out, or the job or its lease vanished: the
-- lease is lost, and nothing changed.

local now = now_ms()
local id = ARGV[7]
local jk = job_key(id)
if not holds_lease(id, jk, ARGV[8], now) then
  return 0
end
local u = now + tonumber(ARGV[9])
redis.call('ZADD', K_LEASED, 'XX', u, id)
redis.call('HSET', jk, 'until', u)
return 1
