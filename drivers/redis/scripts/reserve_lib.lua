-- reserve_lib.lua: the lease helper of reserve.lua and settle.lua. The
-- driver puts this file between common.lua and those two scripts when it
-- loads them; it is not a script of its own.
--
-- reserve(out, now, limit, lease, tokbase) leases up to limit due jobs, by
-- priority then by the time they became due, with a fresh fencing token
-- each (tokbase, ".", and its index in this call). It appends nine values
-- per lease to out (id, token, data, attempts spent, max attempts,
-- redeliveries, priority, tenant, enqueued at in ms), and sets out[1] (ms
-- from now until the next job may become due or a lease runs out; -1 for
-- none), out[2] (1 when a bound was reached, so that more may be due now)
-- and out[3] (now: the server's clock in ms, the leases' Lease.Now). It
-- returns out.
--
-- Before it leases, by the server's clock: the jobs whose lease ran out are
-- queued again, due when it ran out, a redelivery counted, their token kept
-- until a run takes them (at most 200 a call); the scheduled jobs now due are promoted (at most 1000 a call); the
-- tenant pauses that ended give their held jobs back. A paused queue leases
-- nothing. A due job of a paused tenant met in a lane not shared among
-- tenants is held until its pause ends (at most 1000 a call); a paused
-- tenant's turn is skipped in a shared lane. With fairness, the high lane
-- goes by time whatever the tenant; the normal and low lanes take their
-- tenants in turn, a job each, the jobs of no tenant as one more.

-- give_back queues again, at once, no attempt spent and no redelivery
-- counted, the running jobs whose token starts with one of the token bases
-- (a reserve whose answer never reached the driver), and returns how many.
local function give_back(bases, now)
  local pre = {}
  for i, b in ipairs(bases) do pre[i] = b .. '.' end
  local n = 0
  for _, id in ipairs(redis.call('ZRANGE', K_LEASED, 0, -1)) do
    local jk = job_key(id)
    local f = redis.call('HMGET', jk, 'token', 'state', 'pri', 'tenant')
    if f[2] == 'running' and f[1] then
      for _, b in ipairs(pre) do
        if string.sub(f[1], 1, #b) == b then
          redis.call('ZREM', K_LEASED, id)
          redis.call('HDEL', jk, 'until')
          queue_job(id, jk, tonumber(f[3]) or 1, f[4] or '', now, now, nil, false)
          n = n + 1
          break
        end
      end
    end
  end
  return n
end

local function reserve(out, now, limit, lease, tokbase)
  local more = 0
  local nxt = nil

  -- A call run again with the same token base (the client retried it after
  -- a broken connection, its first answer lost): the first run's leases
  -- reached no one, so they are given back before leasing again.
  if limit > 0 and not redis.call('SET', P .. 'tok:' .. tokbase, '1', 'NX', 'PX', lease) then
    give_back({ tokbase }, now)
  end

  -- Leases that ran out.
  local l0 = redis.call('ZRANGE', K_LEASED, 0, 0, 'WITHSCORES')
  if l0[2] and tonumber(l0[2]) <= now then
    local exp = redis.call('ZRANGEBYSCORE', K_LEASED, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 200)
    if #exp == 400 then more = 1 end
    for i = 1, #exp, 2 do
      local id = exp[i]
      local jk = job_key(id)
      redis.call('ZREM', K_LEASED, id)
      local f = redis.call('HMGET', jk, 'pri', 'tenant', 'state', 'redel')
      if f[3] == 'running' then
        -- The job keeps its token: its run may still settle it, until a
        -- reserve takes it again (take_back).
        redis.call('HDEL', jk, 'until')
        queue_job(id, jk, tonumber(f[1]), f[2] or '', tonumber(exp[i + 1]), now, { 'redel', (tonumber(f[4]) or 0) + 1 }, true)
      end
    end
    l0 = redis.call('ZRANGE', K_LEASED, 0, 0, 'WITHSCORES')
  end
  if l0[2] then nxt = tonumber(l0[2]) end

  -- Scheduled jobs now due.
  local s0 = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
  if s0[2] and tonumber(s0[2]) <= now then
    local due = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
    if #due == 2000 then more = 1 end
    for i = 1, #due, 2 do
      local mem = due[i]
      redis.call('ZREM', K_SCHED, mem)
      local f = redis.call('HMGET', job_key(id_of(mem)), 'pri', 'tenant', 'mem')
      if f[3] == mem then
        push_ready(tonumber(f[1]), f[2] or '', tonumber(due[i + 1]), mem)
      end
    end
    s0 = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
  end
  if s0[2] then nxt = min(nxt, tonumber(s0[2])) end

  -- Pauses: the queue's ("q") and the tenants' ("t:<tenant>").
  local paused = {}
  local npaused = 0
  local qpause = nil
  local pz = redis.call('HGETALL', K_PAUSE)
  for i = 1, #pz, 2 do
    local u = tonumber(pz[i + 1])
    if pz[i] == 'q' then
      if u > now then qpause = u else redis.call('HDEL', K_PAUSE, 'q') end
    else
      local t = string.sub(pz[i], 3)
      if u <= now then
        resume_tenant(t)
      else
        paused[t] = true
        npaused = npaused + 1
        nxt = min(nxt, u)
      end
    end
  end

  local function answer()
    if nxt then out[1] = math.max(nxt - now, 0) else out[1] = -1 end
    out[2] = more
    out[3] = now
    return out
  end

  if qpause then
    nxt = min(nxt, qpause)
    return answer()
  end

  -- take leases the job of a member just taken from its lane.
  local n = 0
  local function take(mem)
    local id = id_of(mem)
    local jk = job_key(id)
    local f = redis.call('HMGET', jk, 'data', 'att', 'max', 'redel', 'pri', 'tenant', 'enq', 'mem')
    if f[8] ~= mem then
      return -- a stale member: the job is gone or was queued again since
    end
    local tok = tokbase .. '.' .. n
    local u = now + lease
    redis.call('HSET', jk, 'state', 'running', 'token', tok, 'until', u)
    redis.call('ZADD', K_LEASED, u, id)
    n = n + 1
    nxt = min(nxt, u)
    local o = #out
    out[o + 1] = id
    out[o + 2] = tok
    out[o + 3] = f[1] or ''
    out[o + 4] = tonumber(f[2]) or 0
    out[o + 5] = tonumber(f[3]) or 0
    out[o + 6] = tonumber(f[4]) or 0
    out[o + 7] = tonumber(f[5]) or 1
    out[o + 8] = f[6] or ''
    out[o + 9] = tonumber(f[7]) or 0
  end

  local holds = 0
  for p = 0, 2 do
    if n >= limit or holds >= 1000 then break end
    if FAIR and p > 0 then
      local rk = P .. 'ring:' .. p
      while n < limit do
        local got = false
        local tries = redis.call('LLEN', rk)
        while tries > 0 do
          local t = redis.call('LINDEX', rk, 0)
          if not t then break end
          if paused[t] then
            redis.call('LMOVE', rk, rk, 'LEFT', 'RIGHT')
            tries = tries - 1
          else
            local lk = P .. 'ready:' .. p .. ':t:' .. t
            local m = redis.call('ZPOPMIN', lk)
            if #m == 0 then
              redis.call('LPOP', rk)
              tries = tries - 1
            else
              if redis.call('EXISTS', lk) == 0 then
                redis.call('LPOP', rk)
              else
                redis.call('LMOVE', rk, rk, 'LEFT', 'RIGHT')
              end
              take(m[1])
              got = true
              break
            end
          end
        end
        if not got then break end
      end
    else
      local lk = P .. 'ready:' .. p
      while n < limit and holds < 1000 do
        local m = redis.call('ZPOPMIN', lk, limit - n)
        if #m == 0 then break end
        for i = 1, #m, 2 do
          local mem = m[i]
          local held = false
          if npaused > 0 then
            local t = redis.call('HGET', job_key(id_of(mem)), 'tenant')
            if t and paused[t] then
              redis.call('ZADD', P .. 'held:' .. p .. ':' .. t, m[i + 1], mem)
              holds = holds + 1
              held = true
            end
          end
          if not held then take(mem) end
        end
      end
    end
  end
  if holds >= 1000 then more = 1 end
  return answer()
end
