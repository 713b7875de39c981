-- settle.lua: settles runs, each fenced by its lease token, then leases up
-- to a limit of due jobs (reserve_lib.lua): the settles of concurrent runs
-- in one call, and the next job of each run's slot in the same round trip.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7]  -> the most jobs to lease after the settles (0: none)
-- ARGV[8]  -> the length of a lease in ms
-- ARGV[9]  -> the token base: each lease's token is the base, ".", and its
--             index in this call; the driver makes the base unique per call
-- ARGV[10..] -> the settles, six values each: kind, id, token, arg, code,
--             reason. kind is one of:
--   "a" -> Ack: an attempt spent, the job accepted, kept for the dedupe
--          window (its data dropped unless RetainData is "all"); arg ""
--   "f" -> Fail: an attempt spent, the job failed for good in the state
--          arg ("failed" or "delivery_unknown"), kept RetainFailed (its
--          data dropped when RetainData is "none")
--   "r" -> Retry: an attempt spent, the job due again after arg ms
--   "l" -> Release: no attempt spent, the job due again after arg ms
--   code and reason are stored as the job's last error (not for "a").
--
-- A kind not above fails the script before it changes anything. Each
-- settle is fenced by its token alone (take_back): it changes nothing when
-- its token is not the job's current one (another run took the job, or it
-- was settled), and applies when it is, even after the lease ran out. The
-- settles run in order, before the reserve, by one reading of the server's
-- clock.
--
-- Returns: an array:
--   [1] -> ms from now until the next job may become due or a lease runs
--          out; -1 for none (and when ARGV[7] is 0)
--   [2] -> 1 when a bound of the reserve was reached, so that more may be
--          due now (reserve_lib.lua)
--   [3] -> the server's clock in ms (the leases' Lease.Now)
--   then one integer per settle, in order: 1 when settled, 0 when fenced
--   then nine values per lease: id, token, data, attempts spent, max
--   attempts, redeliveries, priority, tenant, enqueued at (ms)
-- Publishes on {P:Q}:wake the delay until the soonest job a retry or a
-- release queued again is due.

for i = 10, #ARGV, 6 do
  local k = ARGV[i]
  if k ~= 'a' and k ~= 'f' and k ~= 'r' and k ~= 'l' then
    return redis.error_reply('settle: unknown kind ' .. k)
  end
end
local now = now_ms()
local limit = tonumber(ARGV[7])
local out = { -1, 0, now }
local soonest = nil
for i = 10, #ARGV, 6 do
  local kind, id, token = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local jk = job_key(id)
  local att = take_back(id, jk, token)
  if not att then
    out[#out + 1] = 0
  else
    if kind == 'a' then
      finish(id, jk, att + 1, 'accepted', '', '', now)
    elseif kind == 'f' then
      local state = ARGV[i + 3]
      if state ~= 'delivery_unknown' then state = 'failed' end
      finish(id, jk, att + 1, state, ARGV[i + 4], ARGV[i + 5], now)
    else
      if kind == 'r' then att = att + 1 end
      soonest = min(soonest, requeue(id, jk, att, ARGV[i + 4], ARGV[i + 5], tonumber(ARGV[i + 3]), now))
    end
    out[#out + 1] = 1
  end
end
wake(soonest)
if limit > 0 then
  reserve(out, now, limit, tonumber(ARGV[8]), ARGV[9])
end
return out
