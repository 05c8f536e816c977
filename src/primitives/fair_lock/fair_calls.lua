-- The fair lock: Redisson's lock hash and fencing counter (so that it excludes Redisson's locks and
-- our reentrant lock on the same name), with a queue of our own in which waiters are served in the
-- order their first attempts reached the server (fair_queue.lua). ARGV[1] names the operation; the
-- last arguments of each are the caller's client id and the prefix of the clients' liveness keys
-- beside this lock, and for acquire and release the liveness and the waiters' poll cap in ms:
--   acquire    keys: lock, token key, queue, the caller's liveness key   arguments: owner, lease in
--              ms, '' or the hold count before an attempt whose outcome was lost, '1' for a counter
--              that never expires, the lock's channel
--   release    keys: lock, queue, token key   arguments: owner, lease in ms, the lock's channel, ''
--              or the hold count before a lost attempt (release_again.lua), '' or a waiter of
--              the releasing client to hand the lock to, its lease in ms, '1' for a fencing
--              counter that never expires
--   leave      keys: lock, queue   arguments: owner, the lock's channel
-- acquire answers like acquire.lua: a fresh hold's token, {token, count}, or {bound} when queued:
-- the lock's PTTL, or, while the lock is free for a live head that is not the caller (who calls it
-- again: its call may have been lost), how long that head's client still counts as alive. release
-- answers like release.lua; a full release hands the lock to the proposed waiter if, and only if,
-- it is the live head of the queue ({0, token}: the releasing client's own next waiter, served
-- without a message or an attempt), else calls the head by name on the lock's channel, or
-- publishes Redisson's '0' there when nobody is queued. leave takes the owner out of the queue (a
-- waiter that gave up) and calls the next head if the lock is free; it answers 1.
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: reentry.lua
-- include: release_again.lua
-- include: acquire.lua
-- include: release.lua
-- include: fair_queue.lua

local op = ARGV[1]

if op == 'acquire' then
  local lock, token_key, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  local owner, lease, retry_of, keep, channel = ARGV[2], ARGV[3], ARGV[4], ARGV[5] == '1', ARGV[6]
  local client, alive_prefix, liveness, cap = ARGV[7], ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
  local head, wrong = live_head(queue, alive_prefix, client)
  if wrong then return wrong end
  local mine = redis.pcall('hexists', lock, owner)
  if type(mine) == 'table' then return mine end
  local member = member_of(client, owner)
  -- The holder re-enters without queueing (so does a retry whose lost attempt went through);
  -- everyone else takes the lock only at the head of the queue, or when nobody waits.
  if mine == 1 or not head or head == member then
    local reply = acquire(lock, token_key, owner, lease, retry_of, keep)
    if type(reply) == 'table' and reply.err then return reply end
    if type(reply) == 'table' and #reply == 1 then
      keep_place(queue, member, alive, liveness)
      keep_queue(queue, lock, liveness, cap)
      return reply
    end
    if head == member then leave_queue(queue, member) end
    return reply
  end
  keep_place(queue, member, alive, liveness)
  keep_queue(queue, lock, liveness, cap)
  if redis.call('exists', lock) == 1 then return {redis.call('pttl', lock)} end
  -- The lock is free for a live head: called again (a refused call changes nothing), it takes
  -- the lock within a round trip; if it died, its client's key lapses, and the next look passes it.
  call_head(lock, head, channel)
  local head_ttl = redis.call('pttl', alive_prefix .. client_of(head))
  return {math.max(head_ttl, 0) + 1}
end

if op == 'release' then
  local lock, queue, token_key = KEYS[1], KEYS[2], KEYS[3]
  local owner, lease, channel, retry_arg = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local next_owner, next_lease, keep = ARGV[6], ARGV[7], ARGV[8] == '1'
  local client, alive_prefix, liveness, cap = ARGV[9], ARGV[10], tonumber(ARGV[11]), tonumber(ARGV[12])
  local head, wrong = live_head(queue, alive_prefix, client)
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
  if next_owner ~= '' and member_of(client, next_owner) ~= head then next_owner = '' end
  local left = release(lock, token_key, owner, lease, '', retry_arg, next_owner, next_lease, keep)
  if type(left) == 'table' and not left.err then
    leave_queue(queue, head)
    if head then keep_queue(queue, lock, liveness, cap) end
    return left
  end
  if left ~= 0 then return left end
  local refused
  if head then
    keep_queue(queue, lock, liveness, cap)
    refused = call_head(lock, head, channel)
  else
    local told = redis.pcall(publish_command, channel, '0')
    if type(told) == 'table' then refused = told end
  end
  if refused then return {0, refused} end
  return 0
end

if op == 'leave' then
  local lock, queue = KEYS[1], KEYS[2]
  local owner, channel, client, alive_prefix = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local head, wrong = live_head(queue, alive_prefix, client)
  if wrong then return wrong end
  local member = member_of(client, owner)
  leave_queue(queue, member)
  if head == member then
    call_head(lock, redis.call('zrange', queue, 0, 0)[1], channel)
  end
  return 1
end

return redis.error_reply('ERR unknown fair lock operation')
