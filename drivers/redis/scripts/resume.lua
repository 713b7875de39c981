-- resume.lua: ends a pause of the queue, or of one tenant, before its
-- time; a tenant's held jobs go back to their lanes.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> "1" for a tenant's pause, "0" for the queue's
-- ARGV[8] -> the tenant ("" for the jobs of no tenant)
--
-- Returns: 1. Publishes 0 (due now) on {P:Q}:wake.

if ARGV[7] == '1' then
  resume_tenant(ARGV[8])
else
  redis.call('HDEL', K_PAUSE, 'q')
end
wake(0)
return 1
