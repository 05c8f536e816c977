-- The fair lock: Redisson's lock hash and fencing counter (so that it excludes Redisson's locks and
-- our reentrant lock on the same name), with a queue of our own in which waiters are served in the
-- order their first attempts reached the server (fair_queue.lua). ARGV[1] names the operation:
--   acquire    keys: lock, token key, queue, alive   arguments: owner, lease in ms, liveness in ms,
--              '' or the hold count before an attempt whose outcome was lost, '1' for a counter
--              that never expires
--   release    keys: lock, queue, alive, token key   arguments: owner, lease in ms, the lock's
--              channel, the fair channel, '' or the hold count before a lost attempt, '' or a
--              waiter of the releasing client to hand the lock to, its lease in ms, '1' for a
--              fencing counter that never expires
--   leave      keys: lock, queue, alive   arguments: owner, the fair channel
-- acquire answers like acquire.lua: a fresh hold's token, {token, count}, or {bound} when queued,
-- where bound is the lock's PTTL for the head of the queue and -1 for a waiter behind it (it is
-- called by name, or by its heartbeat). release answers like release.lua; a full release hands
-- the lock to the proposed waiter if, and only if, it is the live head of the queue ({0, token}:
-- the releasing client's own next waiter, served without a message or an attempt), else calls
-- the head by name on the fair channel, or publishes Redisson's '0' on the lock's channel when
-- nobody is queued. leave takes the owner out of the queue (a waiter that gave up)
-- and calls the next head if the lock is free; it answers 1.
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: acquire.lua
-- include: release.lua
-- include: server_ms.lua
-- include: fair_queue.lua

local op = ARGV[1]

if op == 'acquire' then
  local lock, token_key, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  local owner, lease, liveness, retry_of, keep = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6] == '1'
  local now = server_ms()
  local head, wrong = live_head(queue, alive, now)
  if wrong then return wrong end
  local mine = redis.pcall('hexists', lock, owner)
  if type(mine) == 'table' then return mine end
  -- The holder re-enters without queueing (so does a retry whose lost attempt went through);
  -- everyone else takes the lock only at the head of the queue, or when nobody waits.
  if mine == 1 or not head or head == owner then
    local reply = acquire(lock, token_key, owner, lease, retry_of, keep)
    if type(reply) == 'table' and reply.err then return reply end
    if type(reply) == 'table' and #reply == 1 then
      keep_place(queue, alive, owner, now, liveness)
      return reply
    end
    if head == owner then leave_queue(queue, alive, owner) end
    return reply
  end
  keep_place(queue, alive, owner, now, liveness)
  return {-1}
end

if op == 'release' then
  local lock, queue, alive, token_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  local owner, lease, lock_channel, fair_channel, retry_arg = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
  local next_owner, next_lease, keep = ARGV[7], ARGV[8], ARGV[9] == '1'
  local head, wrong = live_head(queue, alive, server_ms())
  if wrong then return wrong end
  if retry_arg ~= '' and next_owner ~= '' then
    -- A retry whose lost attempt went through and handed the lock over: the same answer again.
    local held = redis.pcall('hget', lock, owner)
    if type(held) == 'table' then return held end
    if tonumber(held or '0') == tonumber(retry_arg) - 1 and redis.call('hexists', lock, next_owner) == 1 then
      local token = held_token(token_key, next_lease, keep)
      if type(token) == 'table' then return token end
      return {0, token}
    end
  end
  -- Only the head of the queue may be handed the lock: the order is the server's.
  if next_owner ~= head then next_owner = '' end
  local left = release(lock, token_key, owner, lease, '', retry_arg, next_owner, next_lease, keep)
  if type(left) == 'table' and not left.err then
    leave_queue(queue, alive, next_owner)
    return left
  end
  if left ~= 0 then return left end
  local refused
  if head then
    refused = call_head(lock, head, fair_channel)
  else
    local told = redis.pcall(publish_command, lock_channel, '0')
    if type(told) == 'table' then refused = told end
  end
  if refused then return {0, refused} end
  return 0
end

if op == 'leave' then
  local lock, queue, alive = KEYS[1], KEYS[2], KEYS[3]
  local owner, fair_channel = ARGV[2], ARGV[3]
  local head, wrong = live_head(queue, alive, server_ms())
  if wrong then return wrong end
  leave_queue(queue, alive, owner)
  if head == owner then
    call_head(lock, redis.call('zrange', queue, 0, 0)[1], fair_channel)
  end
  return 1
end

return redis.error_reply('ERR unknown fair lock operation')
