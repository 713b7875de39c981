-- purge.lua: forgets finished jobs of one state that finished at least a
-- given time ago, at most 1000 a call. An enqueue under the key of a
-- purged job stores it again: purging accepted jobs ends their dedupe
-- window early.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the state: "accepted", "failed" or "delivery_unknown"
-- ARGV[8] -> how long ago in ms a job must have finished to go
--
-- Returns: the number of jobs forgotten (1000 when more may be left).

local now = now_ms()
local dk = K_DONE[ARGV[7]]
if not dk then return redis.error_reply('purge: not a finished state') end
local ids = redis.call('ZRANGEBYSCORE', dk, '-inf', now - tonumber(ARGV[8]), 'LIMIT', 0, 1000)
for _, id in ipairs(ids) do
  local jk = job_key(id)
  if redis.call('HGET', jk, 'state') == ARGV[7] then
    redis.call('DEL', jk)
  end
  redis.call('ZREM', dk, id)
end
return #ids
