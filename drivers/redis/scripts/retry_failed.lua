-- retry_failed.lua: an operator's retry of a failed job by hand: the job
-- (failed or delivery_unknown, its data kept) is queued again, due now,
-- its attempts and redeliveries reset.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the job's id
--
-- Returns:
--    1 -> queued again
--    0 -> no such job
--   -1 -> the job is not failed
--   -2 -> the job kept no data to run again (RetainData)
-- Publishes 0 (due now) on {P:Q}:wake.

local now = now_ms()
local id = ARGV[7]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'pri', 'tenant', 'hash', 'purged')
-- A job an operator purged keeps its hash to tell duplicates; it is gone.
if not f[4] or f[5] then return 0 end
if f[1] ~= 'failed' and f[1] ~= 'delivery_unknown' then return -1 end
if redis.call('HEXISTS', jk, 'data') == 0 then return -2 end
redis.call('PERSIST', jk)
redis.call('ZREM', K_DONE[f[1]], id)
redis.call('HDEL', jk, 'fin')
queue_job(id, jk, tonumber(f[2]), f[3] or '', now, now, { 'att', 0, 'redel', 0 })
wake(0)
return 1
