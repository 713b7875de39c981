-- queued.lua: counts or lists the queued jobs; reads only. The queued
-- jobs are those of scheduled, of the ready lanes (the tenants' lanes of a
-- ring with fairness) and of the held zsets of the paused tenants, each
-- scored by the time it is or was due (common.lua).
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7] -> "count" or "list"
-- ARGV[8] -> for "list": how many jobs to skip, the first due first
-- ARGV[9] -> for "list": the most jobs to list (at least 1)
--
-- Returns: for "count", an array: the queued jobs, those of them due now
-- by the server's clock (paused or not), the time the longest-waiting due
-- job became due (ms; -1 when none is due), and the server's clock (ms);
-- for "list", the ids of the
-- queued jobs from the offset, by the time they are due, then by the order
-- they were queued.

local now = now_ms()
local lanes = {}
local seen = {}
for p = 0, 2 do
  lanes[#lanes + 1] = P .. 'ready:' .. p
  if FAIR and p > 0 then
    for _, t in ipairs(redis.call('LRANGE', P .. 'ring:' .. p, 0, -1)) do
      local lk = P .. 'ready:' .. p .. ':t:' .. t
      if not seen[lk] then
        seen[lk] = true
        lanes[#lanes + 1] = lk
      end
    end
  end
end
for _, f in ipairs(redis.call('HKEYS', K_PAUSE)) do
  if string.sub(f, 1, 2) == 't:' then
    for p = 0, 2 do lanes[#lanes + 1] = P .. 'held:' .. p .. ':' .. string.sub(f, 3) end
  end
end

if ARGV[7] == 'count' then
  local due = 0
  local oldest = nil
  for _, lk in ipairs(lanes) do
    due = due + redis.call('ZCARD', lk)
    local f = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
    if f[2] then oldest = min(oldest, tonumber(f[2])) end
  end
  local sched = redis.call('ZCARD', K_SCHED)
  local sdue = redis.call('ZCOUNT', K_SCHED, '-inf', now)
  local f = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
  if f[2] and tonumber(f[2]) <= now then oldest = min(oldest, tonumber(f[2])) end
  return { due + sched, due + sdue, oldest or -1, now }
end

local offset = tonumber(ARGV[8])
local limit = tonumber(ARGV[9])
if offset < 0 then offset = 0 end
if limit < 1 then return {} end
lanes[#lanes + 1] = K_SCHED
local all = {}
for _, lk in ipairs(lanes) do
  local m = redis.call('ZRANGE', lk, 0, offset + limit - 1, 'WITHSCORES')
  for i = 1, #m, 2 do all[#all + 1] = { tonumber(m[i + 1]), m[i] } end
end
table.sort(all, function(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] < b[2]
end)
local out = {}
for i = offset + 1, math.min(offset + limit, #all) do
  out[#out + 1] = id_of(all[i][2])
end
return out
