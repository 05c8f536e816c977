-- A write of the read-write lock (rw_calls.lua says the layout): granted when the lock is free or
-- this writer holds it already; else its PTTL, and with a `liveness` the writer's mark in the
-- queue of waiting writers (kept while its client lives). Shared by rw_calls.lua and the
-- multi-lock's script, whose writes never mark (liveness '').
local function mark_of(client, writer, lease, liveness)
  return member_of(client, math.min(tonumber(lease), 2 * tonumber(liveness)) .. ':' .. writer)
end

-- `retry_arg` is the count the writer has on the client's books ('' or '0': none, a fresh write,
-- which takes over a level of its own found there: see take_fresh).
local function write(lock, marks, token_key, writer, lease, retry_arg, liveness, keep, client, alive_prefix, cap)
  local mode = redis.pcall('hget', lock, 'mode')
  if type(mode) == 'table' then return mode end
  local fresh = retry_arg == '' or retry_arg == '0'
  if not fresh and mode then
    local count = tonumber(redis.call('hget', lock, writer) or '0') or 0
    if count == tonumber(retry_arg) + 1 then
      if liveness ~= '' then redis.call('zrem', marks, mark_of(client, writer, lease, liveness)) end
      return regrant(lock, token_key, count, lease, keep)
    end
  end
  if not mode then
    if redis.call('exists', lock) == 0 then
      local token = next_token(token_key, lease, keep)
      if type(token) == 'table' then return token end
      redis.call('hset', lock, 'mode', 'write', writer, '1')
      redis.call('pexpire', lock, lease)
      if liveness ~= '' then redis.call('zrem', marks, mark_of(client, writer, lease, liveness)) end
      return token
    end
  elseif mode == 'write' then
    if redis.call('hexists', lock, writer) == 1 then
      if not fresh then return reenter(lock, token_key, writer, lease, keep) end
      if liveness ~= '' then redis.call('zrem', marks, mark_of(client, writer, lease, liveness)) end
      return take_fresh(lock, token_key, writer, lease, keep)
    end
  elseif redis.call('hexists', lock, string.sub(writer, 1, -7)) == 1 then
    return redis.error_reply('UPGRADE this owner reads the lock: a read cannot become a write')
  end
  if liveness ~= '' then
    -- Marked while its client lives; it tries again when the lock would expire.
    local live = tonumber(liveness)
    keep_place(marks, mark_of(client, writer, lease, liveness), alive_prefix .. client, live)
    keep_queue(marks, lock, live, tonumber(cap))
  end
  return {redis.call('pttl', lock)}
end
