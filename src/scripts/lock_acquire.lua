-- Reentrant lock acquire, Redisson's layout: hash KEYS[1] maps an owner to its hold count, and
-- the hash's PEXPIRE is the lease. Every fresh hold gets a fencing token from KEYS[2].
--   KEYS[1] lock hash      KEYS[2] token key
--   ARGV[1] owner          ARGV[2] lease in ms
--   ARGV[3] (only on a retry) the hold count the owner had before an attempt whose outcome was
--           lost with a connection: if the count is already one higher, that attempt went through.
-- Returns the fencing token of a fresh hold (hold count 1), the cheapest reply for the common case;
-- {token, hold count} when the owner already held the lock; {PTTL} when another owner holds it.
-- Tokens are decimal strings (include/next_token.lua says why), counts and PTTLs integers.
-- Reads come before writes so that a key of the wrong type fails the script with nothing changed.
if ARGV[3] then
  local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
  if count == tonumber(ARGV[3]) + 1 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {redis.call('get', KEYS[2]) or '0', count}
  end
end
if redis.call('exists', KEYS[1]) == 1 then
  if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return {redis.call('pttl', KEYS[1])}
  end
  local token = redis.call('get', KEYS[2]) or '0'
  local count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {token, count}
end
-- include: next_token.lua
redis.call('hset', KEYS[1], ARGV[1], '1')
redis.call('pexpire', KEYS[1], ARGV[2])
return token
