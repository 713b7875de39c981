-- enqueue.lua: stores jobs, each at once, telling duplicates by id and hash.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7..]  -> the jobs, nine values each:
--   id, hash, v (the job's version, kept when its data is dropped), data
--   (the job's JSON), priority (0 high, 1 normal, 2 low), tenant ("" for
--   none), max attempts, run at (ms: the producer's scheduledAt; 0 for
--   now, by the server's clock), enqueued at (ms, by the producer's clock;
--   0 for the server's now)
--
-- A job with no run at is due at the server's now, never at the
-- producer's: a producer whose clock is ahead makes no job wait.
--
-- A job whose id is stored already, in any state, is not stored again:
-- the same hash is a duplicate, another hash a conflict (queue.key_reused).
-- A finished job whose retention ran out (by the server's clock) is
-- forgotten first, so its id is new again.
--
-- Returns: an array with one integer per job, in order:
--   0 -> stored
--   1 -> a duplicate (the same id and hash were stored)
--   2 -> a conflict (the id was stored with another hash)
-- Publishes the delay until the soonest stored job is due on {P:Q}:wake.

local now = now_ms()
local res = {}
local soonest = nil
for i = 7, #ARGV, 9 do
  local id = ARGV[i]
  local jk = job_key(id)
  local cur = redis.call('HMGET', jk, 'hash', 'state', 'fin')
  if cur[1] and cur[3] and K_DONE[cur[2]] then
    local window = RETAINF
    if cur[2] == 'accepted' then window = DEDUPE end
    if tonumber(cur[3]) + window <= now then
      redis.call('DEL', jk)
      redis.call('ZREM', K_DONE[cur[2]], id)
      cur[1] = false
    end
  end
  if cur[1] then
    if cur[1] == ARGV[i + 1] then
      res[#res + 1] = 1
    else
      res[#res + 1] = 2
    end
  else
    local run_at = tonumber(ARGV[i + 7])
    if run_at == 0 then run_at = now end
    local enq = ARGV[i + 8]
    if enq == '0' then enq = now end
    local d = queue_job(id, jk, tonumber(ARGV[i + 4]), ARGV[i + 5], run_at, now, {
      'hash', ARGV[i + 1], 'v', ARGV[i + 2], 'data', ARGV[i + 3], 'pri', ARGV[i + 4], 'tenant', ARGV[i + 5],
      'max', ARGV[i + 6], 'att', 0, 'redel', 0, 'enq', enq })
    soonest = min(soonest, d)
    res[#res + 1] = 0
  end
end
wake(soonest)
return res
