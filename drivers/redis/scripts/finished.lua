-- finished.lua: counts or lists the finished jobs still kept, after it
-- trims the indexes of the finished jobs (done:<state>) of the entries
-- whose retention ran out by the server's clock. An entry outlives its
-- job's key, which expires on its own (finish trims an index only now and
-- then), so that a count of the index alone would count jobs gone. The
-- retention is the queue's (common.lua), whoever calls. Trimming writes
-- nothing to a queue that holds no finished job.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7]  -> "count" or "list"
-- ARGV[8]  -> for "list": the state: "accepted", "failed" or "delivery_unknown"
-- ARGV[9]  -> for "list": how many jobs to skip, the first finished first
-- ARGV[10] -> for "list": the most jobs to list (at least 1)
--
-- Returns: for "count", an array: the accepted, failed and
-- delivery_unknown jobs kept; for "list", the ids of the jobs of the state
-- from the offset, by the time they finished.

local now = now_ms()

local function trim(state)
  local window = RETAINF
  if state == 'accepted' then window = DEDUPE end
  redis.call('ZREMRANGEBYSCORE', K_DONE[state], '-inf', now - window)
  return K_DONE[state]
end

if ARGV[7] == 'count' then
  local out = {}
  for _, state in ipairs({ 'accepted', 'failed', 'delivery_unknown' }) do
    out[#out + 1] = redis.call('ZCARD', trim(state))
  end
  return out
end

if not K_DONE[ARGV[8]] then return redis.error_reply('finished: not a finished state') end
local offset = tonumber(ARGV[9])
local limit = tonumber(ARGV[10])
if offset < 0 then offset = 0 end
if limit < 1 then return {} end
return redis.call('ZRANGE', trim(ARGV[8]), offset, offset + limit - 1)
