-- The steps a lock's acquire and a read-write lock's write share once the lock is theirs to take
-- (hold_depth.lua and next_token.lua come first).

-- A fresh hold of `owner`: one level, a new fencing token. A level of the owner found there when
-- the client holds nothing of the name is one a lost release left (a master acknowledged it, then
-- stopped being master), or a lost attempt's: it is taken over, not re-entered, so that the hold's
-- release frees the lock.
local function take_fresh(lock, token_key, owner, lease, keep)
  local token = next_token(token_key, lease, keep)
  if type(token) == 'table' then return token end
  redis.call('hset', lock, owner, '1')
  redis.call('pexpire', lock, lease)
  return token
end
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
