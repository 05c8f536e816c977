-- Redisson's RSemaphore, to share with Redisson clients: the string `n` holds the permits free (no
-- expiry), and `redisson_sc:{n}` carries the count free after a release or a set, which wakes that
-- many waiters of each client. An acquire also leaves a trace, `redisync_sc_trace:{n}:<id>` holding
-- the permits it took, for `trace` ms: an acquire whose outcome was lost with the connection is
-- asked again by its id (retry-acquire), or undone (undo), without taking or giving back twice. A
-- release leaves one too, so that it is sent again safely.
-- items: each led by its operation, which says how many keys and arguments follow:
--   acquire        keys: n, trace   arguments: k, trace ms
--   retry-acquire  keys: n, trace   arguments: k, trace ms
--   undo           keys: n, trace   arguments: channel
--   release        keys: n, trace   arguments: k, channel, trace ms
--   set            keys: n          arguments: permits, channel
--   add            keys: n          arguments: k, channel
--   available      keys: n          arguments: (none)
--   drain          keys: n          arguments: (none)
-- Replies: acquire 1 taken, 0 too few free; undo 0 given back, -1 nothing taken; release 1 given
-- back, 0 given back before (its trace is there); add the count free after; set 1 set, 0 already set; available the count free; drain the count taken.
-- A count that is no number counts as 0; a key of another type answers WRONGTYPE.
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

local function acquire(n, trace, want, trace_ms, retry)
  if retry and redis.call('exists', trace) == 1 then return 1 end
  local free = free_in(n)
  if type(free) == 'table' then return free end
  local count = tonumber(want)
  if free < count then return 0 end
  redis.call('decrby', n, count)
  redis.call('set', trace, want, 'PX', trace_ms)
  return 1
end

local function undo(n, trace, channel)
  local taken = redis.call('get', trace)
  if not taken then return -1 end
  redis.call('del', trace)
  local free = redis.pcall('incrby', n, taken)
  if type(free) == 'table' then return free end
  announce(channel, free)
  return 0
end

local function release(n, trace, count, channel, trace_ms)
  if redis.call('exists', trace) == 1 then return 0 end
  local free = redis.pcall('incrby', n, count)
  if type(free) == 'table' then return free end
  redis.call('set', trace, count, 'PX', trace_ms)
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
    reply = acquire(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], op == 'retry-acquire')
    k, a = k + 2, a + 3
  elseif op == 'undo' then
    reply = undo(KEYS[k], KEYS[k + 1], ARGV[a + 1])
    k, a = k + 2, a + 2
  elseif op == 'release' then
    reply = release(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
    k, a = k + 2, a + 4
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
