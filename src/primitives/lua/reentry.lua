-- The steps a lock's acquire and a read-write lock's write share once the owner holds the lock
-- (hold_depth.lua and next_token.lua come first).
-- A retried attempt found through (the owner's count is one above the count before it): its
-- grant again, the lease of the lost (or late) attempt renewed.
local function regrant(lock, token_key, count, lease, keep)
  local token = held_token(token_key, lease, keep)
  if type(token) == 'table' then return token end
  redis.call('pexpire', lock, lease)
  return {token, count}
end

-- A re-entry: the owner's count up by one (at most max_depth), the lease renewed.
local function reenter(lock, token_key, owner, lease, keep)
  local token = held_token(token_key, lease, keep)
  if type(token) == 'table' then return token end
  local count = redis.pcall('hincrby', lock, owner, 1)
  if type(count) == 'table' then return count end
  if count > max_depth then return too_deep(lock, owner) end
  redis.call('pexpire', lock, lease)
  return {token, count}
end
