-- purge.lua: drops finished jobs of one state that finished at least a
-- given time ago, at most 1000 a call. A dropped job keeps only what tells
-- a duplicate (hash, v, state, fin) and the field purged, until its key
-- expires at the end of its retention (finish set it), so that an enqueue
-- under its key is still a duplicate (enqueue.lua reads hash, state and
-- fin); every other operation takes it for gone. With ARGV[9] "1" the jobs
-- are forgotten whole, and an enqueue under the key of one stores it
-- again: their dedupe window ends early.
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> the state: "accepted", "failed" or "delivery_unknown"
-- ARGV[8] -> how long ago in ms a job must have finished to go
-- ARGV[9] -> "1" to forget the jobs whole (their keys too), "0" to keep
--            their {v, hash}
--
-- Returns: the number of jobs of the index dropped (1000 when more may be
-- left).

local now = now_ms()
local dk = K_DONE[ARGV[7]]
if not dk then return redis.error_reply('purge: not a finished state') end
local forget = ARGV[9] == '1'
local keep = { hash = true, v = true, state = true, fin = true }
local ids = redis.call('ZRANGEBYSCORE', dk, '-inf', now - tonumber(ARGV[8]), 'LIMIT', 0, 1000)
for _, id in ipairs(ids) do
  local jk = job_key(id)
  if redis.call('HGET', jk, 'state') == ARGV[7] then
    if forget then
      redis.call('DEL', jk)
    else
      local drop = {}
      for _, f in ipairs(redis.call('HKEYS', jk)) do
        if not keep[f] then drop[#drop + 1] = f end
      end
      if #drop > 0 then redis.call('HDEL', jk, unpack(drop)) end
      redis.call('HSET', jk, 'purged', '1')
    end
  end
  redis.call('ZREM', dk, id)
end
return #ids
