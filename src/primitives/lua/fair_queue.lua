-- A fair lock's queue, judged by the server's clock only: `queue` is a sorted set of waiting owners
-- scored by arrival (1, 2, 3, ...), `alive` a sorted set of the same owners scored by the server
-- time in ms until which each counts as alive. A waiter's heartbeat moves its time on; one not
-- heard of by then is dead and leaves the queue at the next look, wherever it stands. Both keys
-- expire two liveness periods after the last heartbeat, so a queue whose waiters all died goes too.
-- Drops dead waiters and returns the head of the queue, or nil; or the error of a queue key of
-- another type (the first reads of a call, so nothing has been written then).
local function live_head(queue, alive, now)
  local dead = redis.pcall('zrangebyscore', alive, '-inf', now)
  if dead.err then return nil, dead end
  for _, owner in ipairs(dead) do
    redis.call('zrem', queue, owner)
    redis.call('zrem', alive, owner)
  end
  local head = redis.pcall('zrange', queue, 0, 0)
  if head.err then return nil, head end
  return head[1], nil
end

-- Keeps `owner` queued (a newcomer at the back) and alive for `liveness` ms from `now`.
local function keep_place(queue, alive, owner, now, liveness)
  if not redis.call('zscore', queue, owner) then
    local last = redis.call('zrange', queue, -1, -1, 'withscores')
    redis.call('zadd', queue, (tonumber(last[2]) or 0) + 1, owner)
  end
  redis.call('zadd', alive, now + liveness, owner)
  redis.call('pexpire', queue, 2 * liveness)
  redis.call('pexpire', alive, 2 * liveness)
end

local function leave_queue(queue, alive, owner)
  redis.call('zrem', queue, owner)
  redis.call('zrem', alive, owner)
  if redis.call('zcard', queue) == 0 then
    redis.call('del', queue, alive)
  end
end

-- Tells `head` that the free lock is its turn. Returns the refused PUBLISH's error, or nil.
local function call_head(lock, head, channel)
  if not head or redis.call('exists', lock) == 1 then return nil end
  local told = redis.pcall(publish_command, channel, head)
  if type(told) == 'table' then return told end
  return nil
end
