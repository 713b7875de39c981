-- fail.lua: settles a job for good, fenced by the lease token: an attempt
-- spent, the job failed or delivery_unknown, kept RetainFailed (its data
-- dropped when RetainData is "none").
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7]  -> the job's id
-- ARGV[8]  -> the lease token
-- ARGV[9]  -> the state: "failed" or "delivery_unknown"
-- ARGV[10] -> the code
-- ARGV[11] -> the reason
--
-- Returns: 1 when settled; 0 when the token is not that of the job's
-- current lease or the lease ran out (nothing changed).

local now = now_ms()
local id = ARGV[7]
local jk = job_key(id)
local att = holds_lease(id, jk, ARGV[8], now)
if not att then
  return 0
end
local state = ARGV[9]
if state ~= 'delivery_unknown' then state = 'failed' end
finish(id, jk, att + 1, state, ARGV[10], ARGV[11], now)
return 1
