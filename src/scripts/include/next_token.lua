-- Sets `token` to the next fencing token of the lock whose counter is KEYS[2]: the larger of the
-- last token + 1 and the server time in microseconds, so tokens keep growing even after a restart
-- without persistence lost the counter. Tokens go to SET as numbers: below 2^53 Redis writes them
-- as exact integers. Included as statements where the token is needed, not as a function: a Lua
-- function would be created anew on every script call.
local now = redis.call('time')
local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('set', KEYS[2], token, 'GET') or '0')
if last >= token then
  token = last + 1
  redis.call('set', KEYS[2], token)
end
