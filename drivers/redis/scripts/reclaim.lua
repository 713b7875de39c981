-- reclaim.lua: gives back the jobs leased by reserves whose answer never
-- reached the driver (the connection broke while Redis ran the script, as
-- in a restart). The driver knows the token base of each reserve it sent,
-- so the leases it never got are queued again at once, no attempt spent
-- and no redelivery counted, instead of running out as redeliveries (which
-- the delivery_unknown policy would fail as of unknown delivery: they were
-- never run).
--
-- KEYS and ARGV[1..6]: those of common.lua.
-- ARGV[7..] -> the token bases of the reserves whose answer was lost
--
-- Returns: the number of jobs given back.

local bases = {}
for i = 7, #ARGV do
  bases[#bases + 1] = ARGV[i]
end
local n = give_back(bases, now_ms())
if n > 0 then
  wake(0)
end
return n
