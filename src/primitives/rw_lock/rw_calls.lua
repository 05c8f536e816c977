-- Acquires and releases of read-write locks in Redisson's layout: the lock hash has `mode`
-- (`read` or `write`), a field per reading owner with its hold count, and the writer's field
-- `<owner>:write`; each read hold level k has a key `<base>:<owner>:rwlock_timeout:<k>` with the
-- lease, and the hash lives as long as the longest of them (or the write lease). Writers that wait
-- mark themselves in a queue of our own (fair_queue.lua: by arrival, alive while their client's
-- key is); a fresh read of a redisync client does not start while a live mark is there (writer
-- preference), and a release of a redisync client that frees the lock, none of whose own writers
-- waits, gives it to the first live marked writer at once.
-- Redisson's clients do not look at the marks, and nothing here needs them.
-- items: each led by its operation, which says how many keys and arguments follow:
--   read           keys: lock, marks, base   arguments: owner, lease in ms, '' or the hold count
--                                            before a lost attempt, then to give writers way
--                                            the client, the liveness keys' prefix and the
--                                            liveness in ms (else three '')
--   write          keys: lock, marks, token  arguments: owner:write, lease in ms, '' or the count
--                                            before an attempt that may have gone through, the
--                                            liveness in ms or '' (no marks), '1' to keep the
--                                            fencing counter, the client, the liveness keys'
--                                            prefix, the poll cap in ms
--   read-release   keys: lock, base, marks, token   arguments: owner, channel, '' or the count
--                                            before a lost attempt, '1' to keep the counter, '1'
--                                            if it may grant the lock to a waiting writer, the
--                                            liveness keys' prefix
--   write-release  keys: lock, base, marks, token   arguments: owner:write, lease in ms, channel,
--                                            '' or the count before a lost attempt (or that of
--                                            a release made again, release_again.lua), '1' to keep
--                                            the counter, '1' if it may grant the lock, the
--                                            liveness keys' prefix
--   leave          keys: marks, lock, base, token   arguments: owner:write, lease in ms, liveness
--                                            in ms, channel, '1' to keep the counter, '1' if a
--                                            grant it missed is to be released (a writer that
--                                            gave up), the client, the liveness keys' prefix
--   force          keys: lock, base, marks   arguments: channel
-- `base` is the prefix of the timeout keys: `{name}`, or the name itself when it has braces.
-- A mark is `<client>/<grant lease>:<owner>:write`: what a grant needs to know of the writer. A
-- grant's lease is short (two liveness periods at most): the writer confirms it at once with a
-- try of its own, which gives it its lease; a grant to a writer that died meanwhile frees the
-- lock soon.
-- Acquires answer like acquire.lua: a fresh write's token (a decimal string), {token, count} for
-- any other hold (reads carry token '0'), {PTTL} when busy; a write by an owner that reads is
-- refused with the error UPGRADE, a level past the re-entry limit with DEPTH. Releases answer
-- like release.lua: the levels left, -1 when the owner holds nothing of that side, -2 when the
-- lost attempt went through, {0, error} when the unlock message was refused. The unlock message is '0' when a read release frees the lock and
-- '1' after every last write level (also when the writer's own reads remain: readers may start);
-- a release that gives the lock to a marked writer publishes `grant <token> <owner>:write`
-- instead, which Redisson's clients ignore (the lock is not free).
-- An item's failure must neither stop the items after it nor undo the ones before: its reads come
-- before its writes, and the commands that can fail go through pcall and end only that item.
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: reentry.lua
-- include: release_again.lua
-- include: fair_queue.lua
-- include: rw_write.lua

-- Redis 7.0 reads its clock for each expiry it sets, so a level and the hash set in one script can
-- end a millisecond or, on a busy server, a few apart.
local expiry_skew_ms = 10

local function timeout_key(base, owner, level)
  return base .. ':' .. owner .. ':rwlock_timeout:' .. level
end

-- Whether a live writer waits (its client's reader is `self`), or the error of a marks key of
-- another type.
local function writer_waits(marks, alive_prefix, self)
  if redis.call('exists', marks) == 0 then return false end
  local head, err = live_head(marks, alive_prefix, self)
  if err then return err end
  return head ~= nil
end

-- The longest time left of any read hold level (0 if none is left), or the first one found that
-- is at least `enough` (readers that came together have levels that end together: one is enough).
local function longest_read(lock, base, enough)
  local fields = redis.call('hgetall', lock)
  local longest = 0
  for i = 1, #fields, 2 do
    local count = tonumber(fields[i + 1])
    if fields[i] ~= 'mode' and count then
      for level = math.min(count, max_depth), 1, -1 do
        local left = redis.call('pttl', timeout_key(base, fields[i], level))
        if left >= enough then return left end
        if left > longest then longest = left end
      end
    end
  end
  return longest
end

-- What the last item learned when it was a read granted in read mode: the next read of the same
-- lock in this call need not look again. Nothing but another read of it runs in between, and Redis
-- stops the clock while a script runs, so the hash's time to live is still exactly what it was.
local granted_read = nil  -- {lock, ttl = the hash's time to live, clear = no writer's mark is live}

-- A fresh read (the owner holds no read of the lock on the client's books) that finds `count`
-- levels of the owner there: levels a lost release left (a master acknowledged it, then stopped
-- being master), taken over as the one level of the new hold, so that its release frees them.
local function take_over_reads(lock, base, owner, count, lease)
  redis.call('hset', lock, owner, '1')
  for level = 2, math.min(count, max_depth) do redis.call('del', timeout_key(base, owner, level)) end
  redis.call('set', timeout_key(base, owner, 1), '1', 'PX', lease)
  if redis.call('pttl', lock) < tonumber(lease) then redis.call('pexpire', lock, lease) end
  return {'0', 1}
end

-- `retry_arg` is the count of the owner's reads on the client's books ('' or '0': none, a fresh
-- read), on a retry the count before the attempt whose outcome was lost.
local function read(lock, marks, base, owner, lease, retry_arg, client, alive_prefix, liveness)
  local last = granted_read
  granted_read = nil
  local fresh = retry_arg == '' or retry_arg == '0'
  if last and last.lock == lock and retry_arg == '' and (client == '' or last.clear) then
    -- (A count that is no number makes HINCRBY fail.)
    local count = redis.pcall('hincrby', lock, owner, 1)
    if type(count) == 'table' then return count end
    if count > 1 then
      granted_read = last
      return take_over_reads(lock, base, owner, count, lease)
    end
    redis.call('set', timeout_key(base, owner, count), '1', 'PX', lease)
    if last.ttl < tonumber(lease) then
      redis.call('pexpire', lock, lease)
      last.ttl = tonumber(lease)
    end
    granted_read = last
    return {'0', count}
  end
  local fields = redis.pcall('hmget', lock, 'mode', owner)
  if fields.err then return fields end
  local mode = fields[1]
  local count = 0
  if mode then
    count = tonumber(fields[2] or '0') or 0
  elseif redis.call('exists', lock) == 1 then
    return {redis.call('pttl', lock)}  -- a plain lock's hash: held by someone
  end
  if fresh and count > 0 then return take_over_reads(lock, base, owner, count, lease) end
  if retry_arg ~= '' and count == tonumber(retry_arg) + 1 then
    -- The lost (or late) attempt went through: its lease is renewed, as a renewal would.
    redis.call('set', timeout_key(base, owner, count), '1', 'PX', lease)
    if redis.call('pttl', lock) < tonumber(lease) then redis.call('pexpire', lock, lease) end
    return {'0', count}
  end
  local clear = false
  if count == 0 then
    if mode == 'write' then
      -- Only the writer itself reads under its write (a downgrade).
      if redis.call('hexists', lock, owner .. ':write') == 0 then return {redis.call('pttl', lock)} end
    elseif client ~= '' then
      -- Until a dead writer's client is judged dead: a liveness period at most.
      local waits = writer_waits(marks, alive_prefix, client)
      if type(waits) == 'table' then return waits end
      if waits then return {tonumber(liveness)} end
      clear = true
    end
  end
  count = redis.pcall('hincrby', lock, owner, 1)
  if type(count) == 'table' then return count end
  if count > max_depth then return too_deep(lock, owner) end
  if not mode then redis.call('hset', lock, 'mode', 'read') end
  redis.call('set', timeout_key(base, owner, count), '1', 'PX', lease)
  local ttl = redis.call('pttl', lock)
  if ttl < tonumber(lease) then
    redis.call('pexpire', lock, lease)
    ttl = tonumber(lease)
  end
  if mode ~= 'write' then granted_read = {lock = lock, ttl = ttl, clear = clear} end
  return {'0', count}
end

local function announce(channel, message, left)
  local told = redis.pcall(publish_command, channel, message)
  if type(told) == 'table' then return {left, told} end
  return left
end

-- A lock that a release just freed goes to a waiting writer of another redisync client (the
-- releasing client asks this only when none of its own writers waits: those try at once, behind
-- the release), which then need not come and ask: the first marked writer whose client is alive.
-- Its hold is a fresh write with the mark's short lease and a new fencing token; it learns of it
-- from the message, or from its next try (which says it held nothing before). Returns the
-- release's reply, or nil if no writer got the lock.
local function grant_to_writer(lock, marks, token_key, channel, keep, may_grant, alive_prefix)
  if not may_grant or redis.call('exists', marks) == 0 then return nil end
  local mark = live_head(marks, alive_prefix, nil)
  if not mark then return nil end
  local lease, writer = string.match(string.sub(mark, #client_of(mark) + 2), '^(%d+):(.+)$')
  if not writer then
    redis.call('zrem', marks, mark)
    return nil
  end
  local token = next_token(token_key, lease, keep)
  if type(token) == 'table' then return nil end  -- (no token to give: the lock stays free)
  leave_queue(marks, mark)
  redis.call('hset', lock, 'mode', 'write', writer, '1')
  redis.call('pexpire', lock, lease)
  return announce(channel, 'grant ' .. token .. ' ' .. writer, 0)
end

local k, a = 1, 1  -- the next item's first key and its operation

-- Read releases of one lock by different owners that come one after the other, none repeating a
-- lost attempt, run as a group (readers that came together leave together): one HMGET finds all
-- their counts, and the last item that ends a level deletes the group's levels and fields at once
-- and sets the hash's time for all of them.
local release_group = nil  -- {mode, counts, next item, last item that releases, levels, fields, ended}
local max_group = 1000  -- (UNPACK's arguments live on Lua's stack)

local function start_release_group(lock, retry_arg)
  local owners, seen = {}, {}
  local ka, aa = k, a
  repeat
    owners[#owners + 1] = ARGV[aa + 1]
    seen[ARGV[aa + 1]] = true
    ka, aa = ka + 4, aa + 7
  until retry_arg ~= '' or #owners == max_group or ARGV[aa] ~= 'read-release' or KEYS[ka] ~= lock or
        ARGV[aa + 3] ~= '' or seen[ARGV[aa + 1]]
  local g = {next = 1, size = #owners, last = 0, levels = {}, fields = {}, ended = 0}
  local fields = redis.pcall('hmget', lock, 'mode', unpack(owners))
  if fields.err then
    g.err = fields
    return g
  end
  g.mode, g.counts = fields[1], {}
  for i = 1, #owners do
    g.counts[i] = tonumber(fields[i + 1] or '0') or 0
    if g.counts[i] > 0 then g.last = i end
  end
  return g
end

local function read_release(lock, base, marks, token_key, owner, channel, retry_arg, keep, may_grant, alive_prefix)
  -- (Redisson's read unlock always looks at every level; this one only when it must.)
  local g = release_group or start_release_group(lock, retry_arg)
  local i = g.next
  g.next = i + 1
  release_group = g.next <= g.size and g or nil
  if g.err then return g.err end
  local count = g.counts[i]
  if retry_arg ~= '' and count == tonumber(retry_arg) - 1 then return -2 end
  if count <= 0 then return -1 end
  local level = timeout_key(base, owner, count)
  g.ended = math.max(g.ended, redis.call('pttl', level))
  g.levels[#g.levels + 1] = level
  if count > 1 then
    redis.call('hincrby', lock, owner, -1)
  else
    g.fields[#g.fields + 1] = owner
  end
  if i < g.last then return count - 1 end
  redis.call('del', unpack(g.levels))
  if #g.fields > 0 then redis.call('hdel', lock, unpack(g.fields)) end
  if redis.call('hlen', lock) > 1 then
    if g.mode == 'write' then return count - 1 end  -- the write's lease keeps the hash
    -- The hash lives as long as the longest level (every acquire and renewal keeps it so): unless
    -- a level that ended was the longest, the hash's time is still right; if one was, another
    -- level as long keeps it right too. (Within the skew, a level may have been the longest.)
    local left = redis.call('pttl', lock)
    if g.ended + expiry_skew_ms < left then return count - 1 end
    local longest = longest_read(lock, base, left)
    if longest > 0 then
      if longest ~= left then redis.call('pexpire', lock, longest) end
      return count - 1
    end
  end
  redis.call('del', lock)
  return grant_to_writer(lock, marks, token_key, channel, keep, may_grant, alive_prefix) or
         announce(channel, '0', 0)
end

local function write_release(lock, base, marks, token_key, writer, lease, channel, retry_arg, keep, may_grant,
                             alive_prefix)
  local newer
  retry_arg, newer = retry_of_release(token_key, retry_arg)
  if newer then return -2 end
  local held = redis.pcall('hget', lock, writer)
  if type(held) == 'table' then return held end
  local count = tonumber(held or '0') or 0
  if retry_arg ~= '' and count == tonumber(retry_arg) - 1 then return -2 end
  if count <= 0 then return -1 end
  if count > 1 then
    redis.call('hincrby', lock, writer, -1)
    redis.call('pexpire', lock, lease)
    return count - 1
  end
  redis.call('hdel', lock, writer)
  local longest = 0
  if redis.call('hlen', lock) > 1 then
    -- The writer's own reads remain: the lock is read now, as long as they last.
    redis.call('hset', lock, 'mode', 'read')
    longest = longest_read(lock, base, math.huge)
  end
  if longest > 0 then
    redis.call('pexpire', lock, longest)
  else
    redis.call('del', lock)
    local granted = grant_to_writer(lock, marks, token_key, channel, keep, may_grant, alive_prefix)
    if granted then return granted end
  end
  return announce(channel, '1', 0)
end

-- A writer that gave up takes its mark away. With `release_grant`, a lock that a release gave it
-- meanwhile (its mark is gone and it holds one write level) is released: the writer never knew.
-- Answers like a release: -1 when nothing was released.
local function leave(marks, lock, base, token_key, writer, lease, liveness, channel, keep, release_grant, client,
                     alive_prefix)
  local mark = mark_of(client, writer, lease, liveness)
  if redis.call('zscore', marks, mark) then
    leave_queue(marks, mark)
    return -1
  end
  if release_grant == '' or redis.pcall('hget', lock, writer) ~= '1' then return -1 end
  return write_release(lock, base, marks, token_key, writer, lease, channel, '', keep, true, alive_prefix)
end

local function force(lock, base, marks, channel)
  local kind = redis.call('type', lock).ok
  if kind == 'none' then return 0 end
  if kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  local fields = redis.call('hgetall', lock)
  for i = 1, #fields, 2 do
    local count = tonumber(fields[i + 1])
    if fields[i] ~= 'mode' and count then
      for level = 1, math.min(count, max_depth) do redis.call('del', timeout_key(base, fields[i], level)) end
    end
  end
  redis.call('del', lock, marks)
  return announce(channel, '1', 1)
end

local function run_next()
  local op = ARGV[a]
  local reply
  if op ~= 'read' then granted_read = nil end
  if op == 'read' then
    reply = read(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4],
                 ARGV[a + 5], ARGV[a + 6])
    k, a = k + 3, a + 7
  elseif op == 'write' then
    reply = write(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4],
                  ARGV[a + 5] == '1', ARGV[a + 6], ARGV[a + 7], ARGV[a + 8])
    k, a = k + 3, a + 9
  elseif op == 'read-release' then
    reply = read_release(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
                         ARGV[a + 4] == '1', ARGV[a + 5] == '1', ARGV[a + 6])
    k, a = k + 4, a + 7
  elseif op == 'write-release' then
    reply = write_release(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
                          ARGV[a + 4], ARGV[a + 5] == '1', ARGV[a + 6] == '1', ARGV[a + 7])
    k, a = k + 4, a + 8
  elseif op == 'leave' then
    reply = leave(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
                  ARGV[a + 4], ARGV[a + 5] == '1', ARGV[a + 6], ARGV[a + 7], ARGV[a + 8])
    k, a = k + 4, a + 9
  elseif op == 'force' then
    reply = force(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1])
    k, a = k + 3, a + 2
  else
    reply = redis.error_reply('ERR unknown read-write lock operation')
    a = #ARGV + 1  -- the rest of the items cannot be found either
  end
  return reply
end

-- include: run_items.lua
