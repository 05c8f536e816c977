-- Sets `token` to the next fencing token of the lock whose counter is KEYS[2]: the larger of the
-- last token + 1 and the server time in microseconds, so tokens keep growing even after a restart
-- without persistence lost the counter. Tokens are decimal strings without leading zeros, built
-- from TIME's two strings and compared as strings (the longer one is larger; at equal length the
-- string order is the number order): turning numbers into strings and back (printf "%.17g" and
-- strtod inside Redis) cost about as much server time as a command. Included as statements where
-- the token is needed, not as a function: a Lua function would be created anew on every call.
local now = redis.call('time')
local micros = now[2]
if #micros < 6 then micros = string.rep('0', 6 - #micros) .. micros end
local token = now[1] .. micros
local last = redis.call('set', KEYS[2], token, 'GET')
if last and (#last > #token or (#last == #token and last >= token)) then
  token = string.format('%.0f', tonumber(last) + 1)  -- exact: tokens stay below 2^53
  redis.call('set', KEYS[2], token)
end
