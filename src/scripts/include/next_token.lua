-- The next fencing token of the lock whose counter is `token_key`: the larger of the last token
-- + 1 and the server time in microseconds, so tokens keep growing even after a restart without
-- persistence lost the counter. The time is read once per script call: the items of a merged
-- call share it (each token key still gets its own last + 1). Tokens are decimal strings without
-- leading zeros, built from TIME's two strings and compared as strings (the longer one is larger;
-- at equal length the string order is the number order): turning numbers into strings and back
-- (printf "%.17g" and strtod inside Redis) cost about as much server time as a command. Returns
-- the error, having written nothing, if the counter holds another type.
local now_micros
local function next_token(token_key)
  if not now_micros then
    local now = redis.call('time')
    local micros = now[2]
    if #micros < 6 then micros = string.rep('0', 6 - #micros) .. micros end
    now_micros = now[1] .. micros
  end
  local token = now_micros
  local last = redis.pcall('set', token_key, token, 'GET')
  if type(last) == 'table' then return last end
  if last and (#last > #token or (#last == #token and last >= token)) then
    token = string.format('%.0f', tonumber(last) + 1)  -- exact: tokens stay below 2^53
    redis.call('set', token_key, token)
  end
  return token
end
