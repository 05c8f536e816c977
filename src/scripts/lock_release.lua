-- Reentrant lock release: one hold level of ARGV[1]. On the last level the lock is deleted and
-- '0' is published on the lock's channel (Redisson's unlock message), or, when ARGV[5] names a
-- waiter of this client, the lock passes straight to that waiter with a fresh fencing token and
-- nothing is published: the lock is never free, so no other client can slip in between.
--   KEYS[1] lock hash      KEYS[2] token key, only given with ARGV[4] (a plain release leaves it
--                          out: one argument less for Redis to parse and hand to Lua)
--   ARGV[1] owner          ARGV[2] lease in ms (kept on a partial release)
--   ARGV[3] the lock's channel
--   ARGV[4] (optional) '' or the hold count the owner had before this release, when an earlier
--           attempt's outcome was lost with a connection
--   ARGV[5], ARGV[6] (optional) the owner to hand the lock to, and its lease in ms
-- Returns the remaining hold count; {0, token} after a hand-off (the token a decimal string); -1
-- when the owner holds nothing (nothing changes, nothing is published); -2 when ARGV[4] shows the
-- earlier attempt went through.
local held = redis.call('hget', KEYS[1], ARGV[1])
local count = held == '1' and 1 or tonumber(held or '0')  -- '1', the common case, without strtod
local retry_of = ARGV[4] ~= nil and ARGV[4] ~= '' and tonumber(ARGV[4])
local next_owner = ARGV[5]
if retry_of and count == retry_of - 1 then
  if next_owner and redis.call('hexists', KEYS[1], next_owner) == 1 then
    return {0, redis.call('get', KEYS[2]) or '0'}  -- that attempt handed the lock over
  end
  return -2
end
if count == 0 then
  return -1
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return count - 1
end
if next_owner then
  -- include: next_token.lua
  redis.call('del', KEYS[1])
  redis.call('hset', KEYS[1], next_owner, '1')
  redis.call('pexpire', KEYS[1], ARGV[6])
  return {0, token}
end
redis.call('del', KEYS[1])
redis.call('publish', ARGV[3], '0')
return 0
