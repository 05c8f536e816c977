-- Takes the members of a multi-lock that share a slot, all at once or none: every member is looked
-- at first, and only when each would be granted now are they taken, each as its own lock takes it
-- (acquire.lua for a reentrant or fair lock, rw_write.lua for a write). So nobody sees some of
-- them taken, and a member that errs takes nothing.
-- ARGV: '1' to keep the fencing counters, the caller's client and the clients' liveness keys'
-- prefix (a fair queue's head is judged by them), then per member its kind (`lock`, `fair` or
-- `write`), its owner field (`<owner>:write` for a write), the lease in ms, and '' or the hold
-- count before an attempt whose outcome was lost with a connection.
-- KEYS, three per member: the lock, its fencing counter, and the fair lock's queue or the write
-- lock's marks (the lock again for a reentrant lock).
-- A multi-lock does not queue: a fair member is free only when nobody waits in its queue, and a
-- write never marks itself; the client waits for a busy member with that member's own acquire.
-- Answers the 1-based index of the first member that is busy, or per member what acquire.lua
-- answers (a fresh hold's token, or {token, count}); an error reply when a key has another type,
-- a write's owner reads the lock (UPGRADE), or a member is held max_depth levels deep (DEPTH).
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: reentry.lua
-- include: acquire.lua
-- include: fair_queue.lua
-- include: rw_write.lua

local keep, client, alive_prefix = ARGV[1] == '1', ARGV[2], ARGV[3]
local members = #KEYS / 3

local function kind_of(i) return ARGV[4 * i] end
local function field_of(i) return ARGV[4 * i + 1] end

local function wrong_type()
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end

-- The held count of `field` in `lock` (0 if none), or the error of a lock of another type.
local function held_count(lock, field)
  local count = redis.pcall('hget', lock, field)
  if type(count) == 'table' then return nil, count end
  return tonumber(count or '0') or 0, nil
end

-- nil when member `i` would be granted now; true when it is busy; or the error that would stop it.
local function blocked(i)
  local lock, token_key, extra = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local kind, field = kind_of(i), field_of(i)
  local counter = redis.call('type', token_key).ok
  if counter ~= 'none' and counter ~= 'string' then return wrong_type() end
  local count, err = held_count(lock, field)
  if err then return err end
  if count >= max_depth then
    return redis.error_reply('DEPTH the owner holds this lock ' .. max_depth .. ' levels deep already')
  end
  if kind == 'write' then
    local mode = redis.call('hget', lock, 'mode')
    if mode == 'write' and count > 0 then return nil end
    if mode == 'read' and redis.call('hexists', lock, string.sub(field, 1, -7)) == 1 then
      return redis.error_reply('UPGRADE this owner reads the lock: a read cannot become a write')
    end
    if redis.call('exists', lock) == 1 then return true end
    return nil
  end
  if count > 0 then return nil end
  if redis.call('exists', lock) == 1 then return true end
  if kind == 'fair' then
    local head, wrong = live_head(extra, alive_prefix, client)
    if wrong then return wrong end
    if head then return true end
  end
  return nil
end

for i = 1, members do
  local why = blocked(i)
  if why == true then return i end
  if why then return why end
end

local replies = {}
for i = 1, members do
  local lock, token_key, extra = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local lease, retry_of = ARGV[4 * i + 2], ARGV[4 * i + 3]
  if kind_of(i) == 'write' then
    replies[i] = write(lock, extra, token_key, field_of(i), lease, retry_of, '', keep, '', '', '')
  else
    replies[i] = acquire(lock, token_key, field_of(i), lease, retry_of, keep)
  end
end
return replies
