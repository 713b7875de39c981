-- ack.lua: settles a run as accepted, fenced by the lease token: an
-- attempt spent, the job done, kept for the dedupe window (its data
-- dropped unless RetainData is "all").
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the job's id
-- ARGV[8] -> the lease token
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
finish(id, jk, att + 1, 'accepted', '', '', now)
return 1
