-- extend.lua: moves the end of a lease to now + a duration, fenced by the
-- lease token alone (take_back): a lease that ran out is extended while its
-- token is the job's current one, no other run having taken the job.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the job's id
-- ARGV[8] -> the lease token
-- ARGV[9] -> the new length of the lease from now, in ms
--
-- Returns: 1 when extended; 0 when the token is not the job's current one
-- (another run took the job, or it was settled) or the job vanished: the
-- lease is lost, and nothing changed.

local now = now_ms()
local id = ARGV[7]
local jk = job_key(id)
if not take_back(id, jk, ARGV[8]) then
  return 0
end
local u = now + tonumber(ARGV[9])
redis.call('ZADD', K_LEASED, u, id)
redis.call('HSET', jk, 'until', u)
return 1
