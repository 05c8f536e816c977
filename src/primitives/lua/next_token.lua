-- The next fencing token of the lock whose counter is `token_key`: the larger of the last token
-- + 1 and the server time in microseconds, so tokens keep growing even after a restart without
-- persistence lost the counter. The time is read once per script call: the items of a merged
-- call share it (each token key still gets its own last + 1). Tokens are decimal strings without
-- leading zeros, built from TIME's two strings and compared as strings (the longer one is larger;
-- at equal length the string order is the number order): turning numbers into strings and back
-- (printf "%.17g" and strtod inside Redis) cost about as much server time as a command, and Lua
-- numbers are exact only up to 2^53. A counter that is no such decimal (tampered with) counts as
-- absent. Tokens end at 2^63 - 1, the largest value of a signed 64-bit counter (Redisson's): past
-- it the counter is left as it was and the error TOKENLIMIT is returned. Returns the error, having
-- written nothing, if the counter holds another type.
-- The counter expires (unless `keep`): after the lease of the hold it numbers, and never before
-- server time has passed the token it holds, so that once it is gone the next token, server time,
-- is still larger than every token before. This assumes the server's clock (and, after a
-- failover, the new master's) does not go back by more than that margin.
local now_micros
local largest_token = '9223372036854775807'

-- `decimal` + 1, digit by digit.
local function increment(decimal)
  local i = #decimal
  while i > 0 and string.byte(decimal, i) == 57 do i = i - 1 end  -- trailing '9's
  if i == 0 then return '1' .. string.rep('0', #decimal) end
  return string.sub(decimal, 1, i - 1) .. string.char(string.byte(decimal, i) + 1) ..
         string.rep('0', #decimal - i)
end

-- Server time in microseconds, as a decimal string, read once per script call.
local function server_micros()
  if not now_micros then
    local now = redis.call('time')
    local micros = now[2]
    if #micros < 6 then micros = string.rep('0', 6 - #micros) .. micros end
    now_micros = now[1] .. micros
  end
  return now_micros
end

-- `decimal` is larger than `other` (both decimals without leading zeros).
local function larger(decimal, other)
  return #decimal > #other or (#decimal == #other and decimal > other)
end

-- The last token of the ten that `token` is in (its last digit a 9), or `token` where that would
-- pass the largest one.
local function end_of_ten(token)
  local last = string.sub(token, 1, -2) .. '9'
  if larger(last, largest_token) then return token end
  return last
end

-- The counters this call has written (token key -> the last token it issued, and what the counter
-- holds since): the next token of one needs no read (the items of a merged call often number one
-- lock or semaphore several times over, and then each token but the first is ahead of the shared
-- server time).
local issued, stored = {}, {}

-- With `reserve`, the counter is written ahead, to the end of the token's ten, and the tokens up
-- to there are this call's without another write: only for holds that keep their own token (leased
-- permits), never where the counter's value is the holder's token (held_token).
local function next_token(token_key, lease, keep, reserve)
  local token = server_micros()
  local last = issued[token_key]
  if not last then
    local value = reserve and end_of_ten(token) or token
    if keep then
      last = redis.pcall('set', token_key, value, 'GET')
    else
      last = redis.pcall('set', token_key, value, 'PX', lease, 'GET')
    end
    if type(last) == 'table' then return last end
    stored[token_key] = value
    if not (last and not larger(token, last) and string.find(last, '^[1-9]%d*$')) then
      issued[token_key] = token
      return token
    end
  end
  token = increment(last)
  if larger(token, largest_token) then
    if not issued[token_key] then redis.call('set', token_key, last) end  -- the read overwrote it
    return redis.error_reply('TOKENLIMIT the fencing token counter is at its largest value')
  end
  issued[token_key] = token
  if reserve and not larger(token, stored[token_key]) then return token end
  local value = reserve and end_of_ten(token) or token
  -- Ahead of server time (a peer's clock, or tokens faster than one a microsecond): kept until
  -- server time has passed it; ten years ahead or more, kept for good.
  local ahead_ms = math.ceil((tonumber(value) - tonumber(now_micros)) / 1000)
  if keep or ahead_ms > 315360000000 then
    redis.call('set', token_key, value)
  else
    redis.call('set', token_key, value, 'PX', tonumber(lease) + ahead_ms)
  end
  stored[token_key] = value
  return token
end

-- The token of a hold that is already there (a re-entry, a confirmed retry, a hand-off sent again):
-- the counter's value, or a fresh token when the counter expired under a hold that outlived its
-- first lease, so that no exclusive hold is ever reported with token 0. Returns the error if the
-- counter holds another type.
local function held_token(token_key, lease, keep)
  local token = redis.pcall('get', token_key)
  if type(token) == 'table' or token then return token end
  return next_token(token_key, lease, keep)
end
