-- A fair lock's queue, judged by the server only: `queue` is a sorted set of waiters scored by
-- arrival (1, 2, 3, ...), each member `client/owner`. Liveness is judged per client, not per
-- waiter: a client keeps a key `<alive prefix><client>` while it has waiters (its heartbeat), and
-- a waiter whose client's key is gone is dead, like every other waiter of that client: they leave
-- the queue together at the next look. Every waiter tries again when the lock would expire, so the
-- queue lives until then and a few liveness periods more; a queue whose waiters all died goes too.

local function member_of(client, owner) return client .. '/' .. owner end

-- The client of a member; nil for a member of no known form (dropped as dead).
local function client_of(member)
  local slash = string.find(member, '/', 1, true)
  return slash and string.sub(member, 1, slash - 1)
end

-- Drops every waiter of `client` (its key is gone): one pass over the queue, once per dead client.
local function drop_client(queue, client)
  local cursor = '0'
  repeat
    local page = redis.call('zscan', queue, cursor, 'match', client .. '/*', 'count', 1000)
    cursor = page[1]
    for i = 1, #page[2], 2 do redis.call('zrem', queue, page[2][i]) end
  until cursor == '0'
end

-- Drops dead waiters at the head and returns the live head's member, or nil; or the error of a
-- queue key of another type (the first read of a call, so nothing has been written then). The
-- caller's own client (`self`) is alive: it is here.
local function live_head(queue, alive_prefix, self)
  while true do
    local first = redis.pcall('zrange', queue, 0, 0)
    if first.err then return nil, first end
    local member = first[1]
    if not member then return nil, nil end
    local client = client_of(member)
    if not client then
      redis.call('zrem', queue, member)
    elseif client == self or redis.call('exists', alive_prefix .. client) == 1 then
      return member, nil
    else
      drop_client(queue, client)
    end
  end
end

-- Waiters try again when the lock would expire, or a poll cap after a look at a lock without
-- expiry: the queue outlives that by a few liveness periods.
local function keep_queue(queue, lock, liveness, cap)
  local pttl = redis.call('pttl', lock)
  if pttl == -1 then pttl = cap end
  if pttl < 0 then pttl = 0 end
  redis.call('pexpire', queue, pttl + 3 * liveness)
end

-- Queues `member` at the back, unless it is queued already, and keeps its client's key `alive`
-- for a liveness period from now (the client's beats may have stopped with its last waiter, the
-- key about to lapse).
local function keep_place(queue, member, alive, liveness)
  redis.call('set', alive, '1', 'px', liveness)
  if redis.call('zscore', queue, member) then return end
  local last = redis.call('zrange', queue, -1, -1, 'withscores')
  redis.call('zadd', queue, (tonumber(last[2]) or 0) + 1, member)
end

local function leave_queue(queue, member)
  redis.call('zrem', queue, member)
  if redis.call('zcard', queue) == 0 then redis.call('del', queue) end
end

-- Tells the head `member` that the free lock is its turn, by name on the lock's channel (a member
-- is never Redisson's '0' or '1'). Returns the refused PUBLISH's error, or nil.
local function call_head(lock, member, channel)
  if not member or redis.call('exists', lock) == 1 then return nil end
  local told = redis.pcall(publish_command, channel, member)
  if type(told) == 'table' then return told end
  return nil
end
