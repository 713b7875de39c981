-- pause.lua: pauses the queue, or one tenant's jobs, for a duration; a
-- longer pause in place is kept.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> "1" for a tenant's pause, "0" for the queue's
-- ARGV[8] -> the tenant ("" for the jobs of no tenant)
-- ARGV[9] -> the length of the pause in ms
--
-- Returns: the end of the pause in place (ms, server time).

local now = now_ms()
local d = tonumber(ARGV[9])
if d < 1 then d = 1 end
local u = now + d
local field = 'q'
if ARGV[7] == '1' then field = 't:' .. ARGV[8] end
local cur = tonumber(redis.call('HGET', K_PAUSE, field) or '0')
if u > cur then
  redis.call('HSET', K_PAUSE, field, u)
  return u
end
return cur
