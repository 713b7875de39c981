-- release.lua: gives a job back without spending an attempt, due again
-- after a delay, fenced by the lease token.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7]  -> the job's id
-- ARGV[8]  -> the lease token
-- ARGV[9]  -> the delay in ms
-- ARGV[10] -> the code
-- ARGV[11] -> the reason
--
-- Returns: 1 when settled; 0 when the token is not that of the job's
-- current lease or the lease ran out (nothing changed). Publishes the
-- delay on {P:Q}:wake.

local now = now_ms()
local id = ARGV[7]
local jk = job_key(id)
local att = holds_lease(id, jk, ARGV[8], now)
if not att then
  return 0
end
wake(requeue(id, jk, att, ARGV[10], ARGV[11], tonumber(ARGV[9]), now))
return 1
