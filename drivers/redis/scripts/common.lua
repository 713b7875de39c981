-- common.lua: the helpers every script of the Redis driver begins with. The
-- driver prepends this file to each script when it loads it; it is not a
-- script of its own.
--
-- Every script takes the same KEYS and the same first six ARGV:
--   KEYS[1] -> {P:Q}:meta                   hash: the queue's settings: "fairness", and its
--                                           retention: "dedupe" and "retainf" (ms), "retaindata"
--   KEYS[2] -> {P:Q}:scheduled              zset: member of a job not yet due -> when it is due (ms)
--   KEYS[3] -> {P:Q}:leased                 zset: id of every leased job -> when its lease runs out (ms)
--   KEYS[4] -> {P:Q}:pause                  hash: "q" -> the end of the queue's pause (ms),
--                                           "t:<tenant>" -> the end of the tenant's pause (ms)
--   KEYS[5] -> {P:Q}:done:accepted          zset: id -> when it finished (ms)
--   KEYS[6] -> {P:Q}:done:failed            zset: id -> when it finished (ms)
--   KEYS[7] -> {P:Q}:done:delivery_unknown  zset: id -> when it finished (ms)
--   ARGV[1] -> the key prefix "{P:Q}:"
--   ARGV[2] -> a shift of the server's clock in ms: 0, but in the driver's own tests
--   ARGV[3] -> "1" when the queue shares its normal and low lanes among tenants
--   ARGV[4] -> RetainData: "failed", "all" or "none"
--   ARGV[5] -> the dedupe window in ms: how long a completed job is kept
--   ARGV[6] -> RetainFailed in ms: how long a failed job is kept
--   ARGV[4..6] are the caller's; the retention the queue's meta key holds
--   (stored by the driver's Open) wins over them, so that every process on
--   the queue keeps, forgets and counts its finished jobs alike.
--
-- The other keys a script touches are derived from ARGV[1], so they share
-- the queue's hash tag and its slot on Redis Cluster (as BullMQ derives its
-- job keys): {P:Q}:job:<id> (hash), {P:Q}:ready:<p> (zset of the due jobs of
-- priority p: 0 high, 1 normal, 2 low), {P:Q}:ready:<p>:t:<tenant> and
-- {P:Q}:ring:<p> (list of tenants in turn) for the lanes shared among
-- tenants, {P:Q}:held:<p>:<tenant> (zset of the due jobs of a paused tenant)
-- and the shard channel {P:Q}:wake.
--
-- A queued job is in exactly one of scheduled (not due yet), a ready lane,
-- a tenant's lane or a held zset (due), its score there the time it is or
-- was due (ms): no other index lists the queued jobs (queued.lua counts
-- and lists them from these).
--
-- A member of scheduled, ready, the tenants' lanes and held is the time
-- the job was queued (the server's clock in microseconds, 16 digits), its
-- order within the script (4 digits), then its id: jobs due at the same
-- millisecond go in the order they were queued.
--
-- Time is the server's (TIME), never a producer's or a worker's: a job
-- enqueued with no run at is due at the server's now, and the reserves
-- answer the server's now, so that a worker decides expiry by it.
--
-- A settle is fenced by its token alone: a job's "token" is its current
-- lease's, set by the reserve that takes it, kept when the lease runs out
-- (a reserve queues the job again with it) until a reserve takes the job
-- again, and cleared by a settle. A settle or an extend with the current
-- token applies even after the lease ran out (take_back).

local P = ARGV[1]
local SHIFT = tonumber(ARGV[2])
local FAIR = ARGV[3] == '1'
local K_META, K_SCHED, K_LEASED = KEYS[1], KEYS[2], KEYS[3]
local RETAIN, DEDUPE, RETAINF
do
  local m = redis.call('HMGET', K_META, 'retaindata', 'dedupe', 'retainf')
  RETAIN = m[1] or ARGV[4]
  DEDUPE = tonumber(m[2]) or tonumber(ARGV[5])
  RETAINF = tonumber(m[3]) or tonumber(ARGV[6])
end
local K_PAUSE = KEYS[4]
local K_DONE = { accepted = KEYS[5], failed = KEYS[6], delivery_unknown = KEYS[7] }
local MEMLEN = 20 -- the length of a member's prefix

local US = 0   -- the server's clock in microseconds, read by now_ms
local QSEQ = 0 -- the jobs this script queued

local function now_ms()
  local t = redis.call('TIME')
  US = tonumber(t[1]) * 1000000 + tonumber(t[2]) + SHIFT * 1000
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + SHIFT
end

local function id_of(mem)
  return string.sub(mem, MEMLEN + 1)
end

local function job_key(id)
  return P .. 'job:' .. id
end

local function min(a, b)
  if a == nil then return b end
  if b == nil then return a end
  if b < a then return b end
  return a
end

-- push_ready puts a due job's member in its lane: one zset per priority, or
-- for the normal and low lanes of a fair queue a zset per tenant, the
-- tenant joining the ring when its zset was empty.
local function push_ready(pri, tenant, score, mem)
  if FAIR and pri > 0 then
    local lk = P .. 'ready:' .. pri .. ':t:' .. tenant
    redis.call('ZADD', lk, score, mem)
    if redis.call('ZCARD', lk) == 1 then
      redis.call('RPUSH', P .. 'ring:' .. pri, tenant)
    end
  else
    redis.call('ZADD', P .. 'ready:' .. pri, score, mem)
  end
end

-- queue_job makes a job queued: scheduled when run_at is later than now,
-- else due; extra holds more fields to set on the job. Its token is
-- cleared, unless keep_token (a lease that ran out: its run may still
-- settle). It returns how long from now it is due (0 when it is).
local function queue_job(id, jk, pri, tenant, run_at, now, extra, keep_token)
  QSEQ = QSEQ + 1
  local mem = string.format('%016d%04d', US, QSEQ % 10000) .. id
  local f = { 'state', 'queued', 'runat', run_at, 'mem', mem }
  if not keep_token then
    f[#f + 1] = 'token'
    f[#f + 1] = ''
  end
  if extra then
    for _, v in ipairs(extra) do f[#f + 1] = v end
  end
  redis.call('HSET', jk, unpack(f))
  if run_at > now then
    redis.call('ZADD', K_SCHED, run_at, mem)
    return run_at - now
  end
  push_ready(pri, tenant, run_at, mem)
  return 0
end

-- wake tells the idle workers that a job is due in delay ms (0: now).
local function wake(delay)
  if delay ~= nil then
    redis.call('SPUBLISH', P .. 'wake', tostring(delay))
  end
end

-- unqueue takes the member mem of a queued job of priority pri and tenant
-- out of wherever it waits: scheduled, its ready lane, its tenant's lane
-- (the tenant leaving the ring when that lane is then empty) or its
-- tenant's held jobs.
local function unqueue(mem, pri, tenant)
  if not mem or mem == '' then return end
  redis.call('ZREM', K_SCHED, mem)
  redis.call('ZREM', P .. 'ready:' .. pri, mem)
  redis.call('ZREM', P .. 'held:' .. pri .. ':' .. tenant, mem)
  if pri > 0 then
    local lk = P .. 'ready:' .. pri .. ':t:' .. tenant
    if redis.call('ZREM', lk, mem) == 1 and redis.call('EXISTS', lk) == 0 then
      redis.call('LREM', P .. 'ring:' .. pri, 0, tenant)
    end
  end
end

-- take_back is the fence of the settles (settle.lua) and of Extend
-- (extend.lua): the run of token holds the job while the job's token is
-- token, whether or not its lease ran out. The job is then running (its
-- entry in leased there, which take_back removes), or queued again by a
-- reserve after its lease ran out, its token kept (take_back takes it out
-- of its lane and undoes the redelivery that reserve counted: the run ended
-- settled after all). A job whose hash vanished, that was settled, or that
-- another run took (a new token) is not held. It returns the attempts the
-- job spent when held, the job now out of leased and of every lane (the
-- caller settles or leases it), else nil, nothing changed.
local function take_back(id, jk, token)
  if token == '' then return nil end
  local f = redis.call('HMGET', jk, 'token', 'att', 'state', 'mem', 'pri', 'tenant', 'redel')
  if not f[1] or f[1] ~= token then return nil end
  if f[3] == 'running' then
    if redis.call('ZREM', K_LEASED, id) == 0 then return nil end
  elseif f[3] == 'queued' then
    unqueue(f[4], tonumber(f[5]) or 1, f[6] or '')
    local redel = (tonumber(f[7]) or 1) - 1
    if redel < 0 then redel = 0 end
    redis.call('HSET', jk, 'state', 'running', 'redel', redel, 'mem', '')
  else
    return nil
  end
  return tonumber(f[2]) or 0
end

-- resume_tenant ends the pause of a tenant and gives its held jobs back to
-- their lanes (held jobs are only ever in lanes not shared by tenant).
local function resume_tenant(tenant)
  redis.call('HDEL', K_PAUSE, 't:' .. tenant)
  local any = false
  for p = 0, 2 do
    local hk = P .. 'held:' .. p .. ':' .. tenant
    if redis.call('EXISTS', hk) == 1 then
      local rk = P .. 'ready:' .. p
      redis.call('ZUNIONSTORE', rk, 2, rk, hk, 'AGGREGATE', 'MIN')
      redis.call('DEL', hk)
      any = true
    end
  end
  return any
end

-- finish settles a job whose lease ended (take_back) for good in state, its
-- attempts now att, applies RetainData, and keeps it for its retention (by
-- time, never by count: the hash expires, and the state's index is
-- trimmed by time).
local function finish(id, jk, att, state, code, reason, now)
  redis.call('HSET', jk, 'state', state, 'att', att, 'token', '', 'code', code, 'reason', reason, 'fin', now)
  local keep = RETAIN == 'all' or (RETAIN == 'failed' and state ~= 'accepted')
  if keep then
    redis.call('HDEL', jk, 'until')
  else
    redis.call('HDEL', jk, 'until', 'data')
  end
  local window = RETAINF
  if state == 'accepted' then window = DEDUPE end
  redis.call('PEXPIRE', jk, window)
  local dk = K_DONE[state]
  redis.call('ZADD', dk, now, id)
  -- The index is trimmed now and then: an entry a little past its window
  -- is left out by the readers (its job has expired).
  if now % 8 == 0 then
    redis.call('ZREMRANGEBYSCORE', dk, '-inf', now - window)
  end
end

-- requeue gives a job whose lease ended (take_back) back, due after delay
-- ms, its attempts now att.
local function requeue(id, jk, att, code, reason, delay, now)
  redis.call('HDEL', jk, 'until')
  local f = redis.call('HMGET', jk, 'pri', 'tenant')
  if delay < 0 then delay = 0 end
  return queue_job(id, jk, tonumber(f[1]), f[2] or '', now + delay, now, { 'att', att, 'code', code, 'reason', reason })
end

-- End of common.lua; the script follows.
