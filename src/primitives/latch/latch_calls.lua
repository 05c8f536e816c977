-- Redisson's RCountDownLatch, to share with Redisson clients: the string `n` holds the count (no
-- expiry; missing means 0, the latch open), and its channel carries '0' when a count-down reaches
-- zero (every waiter of every client looks) and '1' when a count is set.
-- items: each led by its operation, which says how many keys and arguments follow:
--   wait        keys: n   arguments: (none)
--   set         keys: n   arguments: count, channel
--   count-down  keys: n   arguments: channel
--   count       keys: n   arguments: (none)
-- Replies: wait 1 open (the count is 0), 0 not yet; set 1 set, 0 a count was there; count-down
-- and count the count after (0 at the most once open). A key of another type, or a string that is
-- no count, answers WRONGTYPE and is left as it is.
-- include: publish.lua

local k, a = 1, 1  -- the next item's first key and its operation

local function no_count()
  return redis.error_reply('WRONGTYPE the latch holds a string that is no count')
end

local function count_of(n)
  local v = redis.pcall('get', n)
  if type(v) == 'table' then return v end
  local count = tonumber(v or '0')
  if not count then return no_count() end
  return math.max(count, 0)
end

local function set_count(n, count, channel)
  local set = redis.pcall('set', n, count, 'NX')
  if type(set) == 'table' and set.err then return set end
  if not set then
    local there = count_of(n)  -- a key of another type, or no count, is an error, not a count
    if type(there) == 'table' then return there end
    return 0
  end
  redis.pcall(publish_command, channel, '1')
  return 1
end

-- Redisson's count-down: DECR, the key deleted at zero or below, '0' published at zero exactly
-- (a latch already open stays open and says nothing).
local function count_down(n, channel)
  local left = redis.pcall('decr', n)
  if type(left) == 'table' then
    if string.find(left.err, '^WRONGTYPE') then return left end
    return no_count()
  end
  if left <= 0 then redis.call('del', n) end
  if left == 0 then redis.pcall(publish_command, channel, '0') end
  return math.max(left, 0)
end

local function run_next()
  local op = ARGV[a]
  local reply
  if op == 'wait' then
    local count = count_of(KEYS[k])
    if type(count) == 'table' then
      reply = count
    else
      reply = count == 0 and 1 or 0
    end
    k, a = k + 1, a + 1
  elseif op == 'set' then
    reply = set_count(KEYS[k], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 1, a + 3
  elseif op == 'count-down' then
    reply = count_down(KEYS[k], ARGV[a + 1])
    k, a = k + 1, a + 2
  elseif op == 'count' then
    reply = count_of(KEYS[k])
    k, a = k + 1, a + 1
  else
    reply = redis.error_reply('ERR unknown latch operation')
    a = #ARGV + 1  -- the rest of the items cannot be found either
  end
  return reply
end

-- include: run_items.lua
