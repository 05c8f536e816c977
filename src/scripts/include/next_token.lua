-- The next fencing token of a lock whose counter is `token_key`: the larger of the last token + 1
-- and the server time in microseconds, so tokens keep growing even after a restart without
-- persistence lost the counter. Tokens go to SET as numbers: below 2^53 Redis writes them as exact
-- integers.
local function next_token(token_key)
  local now = redis.call('time')
  local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('set', token_key, token, 'GET') or '0')
  if last >= token then
    token = last + 1
    redis.call('set', token_key, token)
  end
  return token
end
