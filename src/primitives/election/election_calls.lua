-- Leader election on a lock: the leader holds the lock `redisync_election:{name}` (the reentrant
-- lock's layout, one owner per campaign), whose fencing token is the term. Every change of leader
-- is a stream entry in `redisync_election_log:{name}` (fields event, term, value, owner; the last
-- 1,000 kept), announced on `redisync_election__channel:{name}` for observers. ARGV[1] names the
-- operation:
--   campaign  keys: lock, token key, log   arguments: owner, lease in ms, '' or the hold count
--             before an attempt whose outcome was lost, '1' for a counter that never expires, the
--             candidate's value, the observers' channel
--             Answers like acquire.lua; a fresh grant appends `elected` with its term and value.
--   resign    keys: lock, log   arguments: owner, term, the observers' channel
--             Appends `resigned` if the owner still leads (the lock's release follows); 1 or 0.
--   leader    keys: lock, log   The last entry's term and value, if it is `elected` and its owner
--             still holds the lock; else 0.
--   next      keys: log   arguments: the id of the last entry seen, or '' for none
--             The entry after it ({id, event, term, value}; with '', the last one), or 0.
-- A log key of another type is WRONGTYPE before anything is written.
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: reentry.lua
-- include: acquire.lua

local op = ARGV[1]

local function log_type_error(log)
  local t = redis.call('type', log).ok
  if t ~= 'none' and t ~= 'stream' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
end

local function append(log, event, term, value, owner, channel)
  redis.call('xadd', log, 'MAXLEN', 1000, '*', 'event', event, 'term', term, 'value', value, 'owner', owner)
  redis.pcall(publish_command, channel, event)
end

-- An entry as {id, {field, value, ...}} read as a table of its fields.
local function fields_of(entry)
  local f = {}
  local list = entry[2]
  for i = 1, #list, 2 do f[list[i]] = list[i + 1] end
  return f
end

if op == 'campaign' then
  local lock, token_key, log = KEYS[1], KEYS[2], KEYS[3]
  local wrong = log_type_error(log)
  if wrong then return wrong end
  local owner, value, channel = ARGV[2], ARGV[6], ARGV[7]
  local reply = acquire(lock, token_key, owner, ARGV[3], ARGV[4], ARGV[5] == '1')
  -- Only a fresh grant is a new term: a confirmed retry's attempt wrote its entry already.
  if type(reply) == 'string' then append(log, 'elected', reply, value, owner, channel) end
  return reply
end

if op == 'resign' then
  local lock, log = KEYS[1], KEYS[2]
  local wrong = log_type_error(log)
  if wrong then return wrong end
  local mine = redis.pcall('hexists', lock, ARGV[2])
  if type(mine) == 'table' then return mine end
  if mine == 0 then return 0 end
  append(log, 'resigned', ARGV[3], '', ARGV[2], ARGV[4])
  return 1
end

if op == 'leader' then
  local lock, log = KEYS[1], KEYS[2]
  local wrong = log_type_error(log)
  if wrong then return wrong end
  local last = redis.call('xrevrange', log, '+', '-', 'COUNT', 1)[1]
  if not last then return 0 end
  local f = fields_of(last)
  if f.event ~= 'elected' then return 0 end
  local holds = redis.pcall('hexists', lock, f.owner)
  if type(holds) == 'table' then return holds end
  if holds == 0 then return 0 end
  return {f.term, f.value}
end

if op == 'next' then
  local log = KEYS[1]
  local wrong = log_type_error(log)
  if wrong then return wrong end
  local entry
  if ARGV[2] == '' then
    entry = redis.call('xrevrange', log, '+', '-', 'COUNT', 1)[1]
  else
    entry = redis.call('xrange', log, '(' .. ARGV[2], '+', 'COUNT', 1)[1]
  end
  if not entry then return 0 end
  local f = fields_of(entry)
  return {entry[1], f.event, f.term, f.value}
end

return redis.error_reply('ERR unknown election operation')
