-- Redisson's RSemaphore, to share with Redisson clients: the string `n` holds the permits free (no
-- expiry), and `redisson_sc:{n}` carries the count free after a release or a set, which wakes that
-- many waiters of each client. Each client also keeps a trace of its calls that changed the count,
-- the hash `redisync_sc_trace:{n}:<client>` (call id -> permits), which lasts `trace` ms after its
-- last write: a call whose outcome was lost with the connection is asked again by its id
-- (retry-acquire, release) or undone (undo) without counting twice. A call names the ids whose
-- outcome its client has since learned (`forget`: a count, then the ids), which leave the trace, so
-- that it holds about as many ids as the client has calls in flight.
-- items: each led by its operation, which says how many keys and arguments follow:
--   acquire        keys: n, trace   arguments: k, trace ms, id, forget
--   retry-acquire  keys: n, trace   arguments: k, trace ms, id, forget
--   undo           keys: n, trace   arguments: channel, id
--   release        keys: n, trace   arguments: k, channel, trace ms, id, forget
--   set            keys: n          arguments: permits, channel
--   add            keys: n          arguments: k, channel
--   available      keys: n          arguments: (none)
--   drain          keys: n          arguments: (none)
-- Replies: acquire 1 taken, 0 too few free; undo 0 given back, -1 nothing taken; release 1 given
-- back, 0 given back before (by the same call, sent earlier); set 1 set, 0 already set; add the
-- count free after; available the count free; drain the count taken. A count that is no number
-- counts as 0; a key of another type answers WRONGTYPE.
-- include: publish.lua

local k, a = 1, 1  -- the next item's first key and its operation

local function free_in(n)
  local v = redis.pcall('get', n)
  if type(v) == 'table' then return v end
  return tonumber(v or '0') or 0
end

local function announce(channel, free)
  if free > 0 then redis.pcall(publish_command, channel, tostring(free)) end
end

-- Takes the ids at ARGV[from] (their count, then the ids) out of `trace`; returns the argument
-- after them.
local function forget(trace, from)
  local n = tonumber(ARGV[from])
  if n > 0 then redis.call('hdel', trace, unpack(ARGV, from + 1, from + n)) end
  return from + n + 1
end

local function remember(trace, id, count, trace_ms)
  redis.call('hset', trace, id, count)
  redis.call('pexpire', trace, trace_ms)
end

local function acquire(n, trace, want, trace_ms, id, retry)
  if retry and redis.call('hexists', trace, id) == 1 then return 1 end
  local free = free_in(n)
  if type(free) == 'table' then return free end
  local count = tonumber(want)
  if free < count then return 0 end
  redis.call('decrby', n, count)
  remember(trace, id, want, trace_ms)
  return 1
end

local function undo(n, trace, channel, id)
  local taken = redis.call('hget', trace, id)
  if not taken then return -1 end
  redis.call('hdel', trace, id)
  local free = redis.pcall('incrby', n, taken)
  if type(free) == 'table' then return free end
  announce(channel, free)
  return 0
end

local function release(n, trace, count, channel, trace_ms, id)
  if redis.call('hexists', trace, id) == 1 then return 0 end
  local free = redis.pcall('incrby', n, count)
  if type(free) == 'table' then return free end
  remember(trace, id, count, trace_ms)
  announce(channel, free)
  return 1
end

local function add(n, count, channel)
  local free = free_in(n)
  if type(free) == 'table' then return free end
  free = free + tonumber(count)
  redis.call('set', n, free)
  announce(channel, free)
  return free
end

local function run_next()
  local op = ARGV[a]
  local reply
  if op == 'acquire' or op == 'retry-acquire' then
    local trace = KEYS[k + 1]
    local after = forget(trace, a + 4)
    reply = acquire(KEYS[k], trace, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], op == 'retry-acquire')
    k, a = k + 2, after
  elseif op == 'undo' then
    reply = undo(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 2, a + 3
  elseif op == 'release' then
    local trace = KEYS[k + 1]
    local after = forget(trace, a + 5)
    reply = release(KEYS[k], trace, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
    k, a = k + 2, after
  elseif op == 'set' then
    reply = redis.pcall('setnx', KEYS[k], ARGV[a + 1])
    if reply == 1 then announce(ARGV[a + 2], tonumber(ARGV[a + 1])) end
    k, a = k + 1, a + 3
  elseif op == 'add' then
    reply = add(KEYS[k], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 1, a + 3
  elseif op == 'available' then
    reply = free_in(KEYS[k])
    k, a = k + 1, a + 1
  elseif op == 'drain' then
    reply = free_in(KEYS[k])
    if type(reply) ~= 'table' and reply > 0 then redis.call('set', KEYS[k], 0) end
    k, a = k + 1, a + 1
  else
    reply = redis.error_reply('ERR unknown semaphore operation')
    a = #ARGV + 1  -- the rest of the items cannot be found either
  end
  return reply
end

-- include: run_items.lua
