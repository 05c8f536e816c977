-- One acquire: the owner's hold count in the lock hash goes up by one, the lease is renewed.
-- `retry_of` is the hold count the owner has on the client's books ('' or '0': none, a fresh
-- acquire); on a retry that is the count before an attempt whose outcome was lost with a
-- connection: if the count is already one higher, that attempt went through.
-- Returns the fencing token of a fresh hold (hold count 1), the cheapest reply for the common
-- case; {token, hold count} when the owner already held the lock; {PTTL} when another owner
-- holds it; the error when a key has another type, or DEPTH past the re-entry limit. `keep`: the fencing counter never expires.
local function acquire(lock, token_key, owner, lease, retry_of, keep)
  local fresh = retry_of == '' or retry_of == '0'
  if not fresh then
    local held = redis.pcall('hget', lock, owner)
    if type(held) == 'table' then return held end
    local count = tonumber(held or '0')
    if count == tonumber(retry_of) + 1 then return regrant(lock, token_key, count, lease, keep) end
  end
  if redis.call('exists', lock) == 1 then
    local mine = redis.pcall('hexists', lock, owner)
    if type(mine) == 'table' then return mine end
    if mine == 0 then return {redis.call('pttl', lock)} end
    if not fresh then return reenter(lock, token_key, owner, lease, keep) end
  end
  return take_fresh(lock, token_key, owner, lease, keep)
end
