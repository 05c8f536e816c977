-- One release: one hold level of the owner. On the last level the lock is deleted and '0' is
-- published on its channel (Redisson's unlock message), or, when `next_owner` names a waiter of
-- this client, the lock passes straight to that waiter with a fresh fencing token and nothing is
-- published: the lock is never free, so no other client can slip in between. `retry_arg` is '' or
-- the hold count the owner had before this release, when an earlier attempt's outcome was lost
-- with a connection, or names the hold of a release made again (release_again.lua). `lease` is
-- kept on a partial release. `token_key` is needed only for a retry or a hand-off.
-- Returns the remaining hold count; {0, token} after a hand-off; {0, error} when the lock was
-- deleted but the unlock message was refused (an ACL without the channel): the release stands,
-- only the waiters were not told; -1 when the owner holds nothing (nothing changes, nothing is
-- published); -2 when `retry_arg` shows the earlier attempt went through, or a newer hold than the
-- one a release made again ends; the error when a key has another type.
local function release(lock, token_key, owner, lease, channel, retry_arg, next_owner, next_lease, keep)
  local newer
  retry_arg, newer = retry_of_release(token_key, retry_arg)
  if newer then return -2 end
  local held = redis.pcall('hget', lock, owner)
  if type(held) == 'table' then return held end
  -- '1', the common case, without strtod; a count that is no number counts as nothing held
  local count = held == '1' and 1 or tonumber(held or '0') or 0
  local retry_of = retry_arg ~= '' and tonumber(retry_arg)
  if retry_of and count == retry_of - 1 then
    if next_owner ~= '' and redis.call('hexists', lock, next_owner) == 1 then
      local token = held_token(token_key, next_lease, keep)  -- that attempt handed the lock over
      if type(token) == 'table' then return token end
      return {0, token}
    end
    return -2
  end
  if count <= 0 then
    return -1
  end
  if count > 1 then
    local left = redis.pcall('hincrby', lock, owner, -1)
    if type(left) == 'table' then return left end
    redis.call('pexpire', lock, lease)
    return left
  end
  if next_owner ~= '' then
    local token = next_token(token_key, next_lease, keep)
    if type(token) == 'table' then return token end
    redis.call('del', lock)
    redis.call('hset', lock, next_owner, '1')
    redis.call('pexpire', lock, next_lease)
    return {0, token}
  end
  redis.call('del', lock)
  if channel == '' then return 0 end  -- the caller announces it (a fair lock names its next waiter)
  local told = redis.pcall(publish_command, channel, '0')
  if type(told) == 'table' then return {0, told} end
  return 0
end
