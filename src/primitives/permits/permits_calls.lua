-- Leased permits (redisync's layout; Redisson's RPermitExpirableSemaphore cannot renew a permit):
--   permits  hash `n`, field 'permits': how many permits there are in all (no expiry: it is the
--            semaphore itself, like RSemaphore's string)
--   leases   zset `redisync_permits_leases:{n}`: permit id -> end of its lease in server ms
--   holders  hash `redisync_permits_holders:{n}`: permit id -> '<k>:<token>', 'used', the sum of
--            the k's, and 'keys_until' (permits_keys.lua); with the leases, gone at most a quarter
--            lease after the last permit ends, deleted with it
--   token    `redisync_permits_token:{n}`: the fencing counter (next_token.lua)
-- A permit whose lease ended is given back by the next call that looks (acquire, available,
-- release), judged by server time; the count it frees is published on the channel, so that waiters
-- of every client look again. A permit is never renewed past its end, so no two holders count one
-- permit at once.
-- items: each led by its operation, which says how many keys and arguments follow:
--   acquire        keys: permits, leases, holders, token   arguments: id, k, lease, channel, keep
--   retry-acquire  the same, after an attempt whose outcome was lost: the id among the holders is
--                  that attempt's grant (its token is answered, its lease begins again)
--   release        keys: permits, leases, holders          arguments: id, channel
--   release-to     keys: permits, leases, holders, token   arguments: id, channel, next id, its k, its
--                  lease, keep: the permits go on to a waiter of the releasing client (the next id)
--                  if enough are free, with a fresh token, and only what is left is published; sent
--                  again after a lost outcome, it finds the next id among the holders
--   acquire-fair, retry-acquire-fair, release-fair, release-to-fair: the same for fair permits,
--                  with two keys more for an acquire (the queue, the caller's liveness key) and one
--                  for a release (the queue), and four arguments more (the caller's client, the
--                  liveness keys' prefix, the liveness and the waiters' poll cap in ms): waiters
--                  queue on the server (fair_queue.lua) and only the live head takes permits; a
--                  release calls the head by name instead of publishing a count, and passes its
--                  permits on only to the head
--   leave          keys: permits, leases, holders, queue   arguments: id, channel, client, alive prefix
--                  (a fair waiter that gave up)
--   set            keys: permits, leases, holders          arguments: n, channel
--   add            keys: permits, leases, holders          arguments: k, channel
--   available      keys: permits, leases, holders          arguments: channel
-- Replies: acquire {1, token} held, {0, ms} not enough permits until at most ms from now (-1: no
-- lease ends); release 0 released, -1 not held; release-to also {1, token}: released, and the next
-- id holds its permits with that token; set 1 set, 0 already set; add the new number of
-- permits; available the permits free now. Errors: PERMITS (k more than there are, or a number of
-- permits that would go below 0), WRONGTYPE.
-- include: publish.lua
-- include: next_token.lua
-- include: permits_keys.lua
-- include: fair_queue.lua

local k, a = 1, 1  -- the next item's first key and its operation

-- Server time in ms, from the same reading as the fencing tokens of this call (all its items share it).
local now_ms
local function server_ms()
  if not now_ms then now_ms = tonumber(string.sub(server_micros(), 1, -4)) end
  return now_ms
end

-- The end of a lease of `lease` ms (as sent) granted now, as the string ZADD takes: the items of a
-- call mostly share one lease, and turning a number into a string costs Redis a printf. (Server ms
-- plus a lease of at most a year have 13 digits: tostring's 14 significant ones keep them exact.)
local lease_ends = {}
local function lease_end(lease)
  local ends = lease_ends[lease]
  if not ends then
    ends = tostring(server_ms() + tonumber(lease))
    lease_ends[lease] = ends
  end
  return ends
end

-- During a call on fair permits: their queue, and who calls.
local fair

-- Tells the waiters that `freed` permits are free: the count, or the live head of a fair queue by
-- name (only it may take them).
local function announce(channel, freed)
  if freed <= 0 then return end
  if fair then
    local head = live_head(fair.queue, fair.alive_prefix, fair.client)
    if head then
      redis.pcall(publish_command, channel, head)
      return
    end
  end
  redis.pcall(publish_command, channel, tostring(freed))
end

-- What this call knows of each semaphore it touched, by holders key: 'used' and 'keys_until' of
-- the holders hash as they are now. Only this call writes them meanwhile, and its items share one
-- server time (a lease granted since ends later), so the first item looks for the leases that ended
-- and reads them, and the items after it read only their own permit.
local known = {}

-- Writes how many permits are used; with none, the leases and holders go.
local function set_used(leases, holders, used)
  local state = known[holders]
  state.used = used
  if used == 0 then
    redis.call('del', leases, holders)
    state.keys_until = nil
  else
    redis.call('hset', holders, 'used', used)
  end
end

-- Gives back the permits whose lease ended by `now`; returns the permits used after that and
-- (with `id`) what the holders have for `id` then, or the error of a key of another type. The
-- call knows the keys' 'keys_until' from then on (`known`).
local function give_back_ended(leases, holders, now, channel, id)
  local state = known[holders]
  if state then return state.used, id and redis.call('hget', holders, id) end
  local ended = redis.pcall('zrangebyscore', leases, '-inf', now)
  if ended.err then return ended end
  local found = redis.pcall('hmget', holders, 'used', 'keys_until', id or 'used')
  if found.err then return found end
  state = {used = tonumber(found[1] or '0') or 0, keys_until = tonumber(found[2])}
  known[holders] = state
  local mine = id and found[3]
  if #ended == 0 then return state.used, mine end
  local freed = 0
  for _, gone in ipairs(ended) do
    local held = redis.call('hget', holders, gone)
    if held then freed = freed + (tonumber(string.match(held, '^(%d+):')) or 0) end
    redis.call('hdel', holders, gone)
    if gone == id then mine = false end
  end
  redis.call('zremrangebyscore', leases, '-inf', now)
  set_used(leases, holders, math.max(state.used - freed, 0))
  announce(channel, freed)
  return state.used, mine
end

-- The permits there are in all, read once per call (set and add keep it).
local totals = {}
local function total_of(permits)
  local total = totals[permits]
  if total then return total end
  total = redis.pcall('hget', permits, 'permits')
  if type(total) == 'table' then return total end
  total = tonumber(total or '0') or 0
  totals[permits] = total
  return total
end

-- Gives `n` permits (a decimal string) to `id` for `lease` ms, enough being free while `used` are
-- held by others; returns its token, or the error of the fencing counter.
local function grant(leases, holders, token_key, id, n, used, lease, keep)
  local token = next_token(token_key, lease, keep == '1', true)
  if type(token) == 'table' then return token end
  local state = known[holders]
  local now_used = used + tonumber(n)
  if now_used == state.used then
    redis.call('hset', holders, id, n .. ':' .. token)  -- permits passed on: as many used as before
  else
    redis.call('hset', holders, id, n .. ':' .. token, 'used', now_used)
    state.used = now_used
  end
  redis.call('zadd', leases, lease_end(lease), id)
  state.keys_until = keep_permits_keys(leases, holders, state.keys_until, server_ms(), tonumber(lease))
  return token
end

local function acquire(permits, leases, holders, token_key, id, want, lease, channel, keep, retry)
  local now = server_ms()
  local used = give_back_ended(leases, holders, now, channel)
  if type(used) == 'table' then return used end
  local total = total_of(permits)
  if type(total) == 'table' then return total end
  local n = tonumber(want)
  if retry then
    local held = redis.call('hget', holders, id)
    if held then
      redis.call('zadd', leases, lease_end(lease), id)
      local state = known[holders]
      state.keys_until = keep_permits_keys(leases, holders, state.keys_until, now, tonumber(lease))
      return {1, string.match(held, ':(%d+)$')}
    end
  end
  if n > total then
    return redis.error_reply('PERMITS ' .. want .. ' permits asked for, ' .. total .. ' in all')
  end
  if total - used < n then
    local first = redis.call('zrange', leases, 0, 0, 'WITHSCORES')
    if #first == 0 then return {0, -1} end
    return {0, math.max(tonumber(first[2]) - now, 1)}
  end
  local token = grant(leases, holders, token_key, id, want, used, lease, keep)
  if type(token) == 'table' then return token end
  return {1, token}
end

-- With `next_id`, the permits go on to it if enough are free (see release-to).
local function release(permits, leases, holders, id, channel, token_key, next_id, next_n, next_lease, keep)
  local used, held = give_back_ended(leases, holders, server_ms(), channel, id)
  if type(used) == 'table' then return used end
  if not held then
    local passed = next_id and redis.call('hget', holders, next_id)
    if passed then return {1, string.match(passed, ':(%d+)$')} end  -- an earlier call passed them on
    return -1
  end
  local n = tonumber(string.match(held, '^(%d+):')) or 0
  local left = math.max(used - n, 0)
  redis.call('hdel', holders, id)
  redis.call('zrem', leases, id)
  local next_member = next_id and fair and member_of(fair.client, next_id)
  if next_member and next_member ~= live_head(fair.queue, fair.alive_prefix, fair.client) then
    next_id = nil  -- fair permits go to the head of the queue only: the order is the server's
  end
  if next_id then
    local total = total_of(permits)
    local wanted = tonumber(next_n)
    if type(total) ~= 'table' and total - left >= wanted then
      local token = grant(leases, holders, token_key, next_id, next_n, left, next_lease, keep)
      if type(token) ~= 'table' then
        if next_member then leave_queue(fair.queue, next_member) end
        announce(channel, n - wanted)
        return {1, token}
      end
      -- The fencing counter refused (out of memory, TOKENLIMIT), having written nothing: a plain
      -- release, and the waiter tries by itself.
    end
  end
  set_used(leases, holders, left)
  announce(channel, n)
  return 0
end

-- The permits free now, for the next in a fair queue.
local function free_now(permits, holders)
  local total = total_of(permits)
  if type(total) == 'table' then return 0 end
  local state = known[holders]
  return total - (state and state.used or tonumber(redis.call('hget', holders, 'used') or '0') or 0)
end

-- A fair acquire: only the live head of the queue takes permits (or anyone while nobody waits);
-- everyone else keeps its place and waits to be called by name, or until the first lease ends or
-- the head's client would count as dead.
local function acquire_fair(permits, leases, holders, token_key, alive, id, want, lease, channel, keep, retry)
  local head, wrong = live_head(fair.queue, fair.alive_prefix, fair.client)
  if wrong then return wrong end
  local member = member_of(fair.client, id)
  if not head or head == member or (retry and redis.call('hexists', holders, id) == 1) then
    local reply = acquire(permits, leases, holders, token_key, id, want, lease, channel, keep, retry)
    if reply[1] == 1 then
      if head == member then
        leave_queue(fair.queue, member)
        announce(channel, free_now(permits, holders))  -- what is left is the next one's turn
      end
      return reply
    end
    if reply.err then return reply end
    keep_place(fair.queue, member, alive, fair.liveness)
    keep_queue(fair.queue, leases, fair.liveness, fair.cap)
    return reply
  end
  keep_place(fair.queue, member, alive, fair.liveness)
  keep_queue(fair.queue, leases, fair.liveness, fair.cap)
  local bound = math.max(redis.call('pttl', fair.alive_prefix .. client_of(head)), 0) + 1
  local first = redis.call('zrange', leases, 0, 0, 'WITHSCORES')
  if #first > 0 then bound = math.min(bound, math.max(tonumber(first[2]) - server_ms(), 1)) end
  return {0, bound}
end

-- A fair waiter that gave up leaves its place; if it was the head, the next one is called.
local function leave(permits, holders, id, channel)
  local head = live_head(fair.queue, fair.alive_prefix, fair.client)
  local member = member_of(fair.client, id)
  leave_queue(fair.queue, member)
  if head == member then announce(channel, free_now(permits, holders)) end
  return 1
end

local function set_permits(permits, n, channel)
  local set = redis.pcall('hsetnx', permits, 'permits', n)
  if type(set) == 'table' then return set end
  if set == 1 then
    totals[permits] = tonumber(n)
    announce(channel, tonumber(n))
  end
  return set
end

local function add_permits(permits, leases, holders, delta, channel)
  local total = total_of(permits)
  if type(total) == 'table' then return total end
  local d = tonumber(delta)
  if total + d < 0 then
    return redis.error_reply('PERMITS ' .. total .. ' permits in all, fewer than ' .. -d .. ' to take away')
  end
  redis.call('hset', permits, 'permits', total + d)
  totals[permits] = total + d
  announce(channel, d)
  return total + d
end

local function available(permits, leases, holders, channel)
  local used = give_back_ended(leases, holders, server_ms(), channel)
  if type(used) == 'table' then return used end
  local total = total_of(permits)
  if type(total) == 'table' then return total end
  return math.max(total - used, 0)
end

-- The fair context of an item whose queue is KEYS[queue_at] and whose last four arguments, from
-- ARGV[from], are the caller's client, the liveness keys' prefix, the liveness and the poll cap.
local function fair_context(queue_at, from)
  return {queue = KEYS[queue_at], client = ARGV[from], alive_prefix = ARGV[from + 1],
          liveness = tonumber(ARGV[from + 2]), cap = tonumber(ARGV[from + 3])}
end

local function run_next()
  local op = ARGV[a]
  local reply
  fair = nil
  if op == 'acquire-fair' or op == 'retry-acquire-fair' then
    fair = fair_context(k + 4, a + 6)
    reply = acquire_fair(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 5], ARGV[a + 1], ARGV[a + 2],
                         ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], op == 'retry-acquire-fair')
    k, a = k + 6, a + 10
  elseif op == 'release-fair' then
    fair = fair_context(k + 3, a + 3)
    reply = release(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 4, a + 7
  elseif op == 'release-to-fair' then
    fair = fair_context(k + 4, a + 7)
    reply = release(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2], KEYS[k + 3], ARGV[a + 3],
                    ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
    k, a = k + 5, a + 11
  elseif op == 'leave' then
    fair = {queue = KEYS[k + 3], client = ARGV[a + 3], alive_prefix = ARGV[a + 4]}
    reply = leave(KEYS[k], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 4, a + 5
  elseif op == 'acquire' or op == 'retry-acquire' then
    reply = acquire(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
                    ARGV[a + 4], ARGV[a + 5], op == 'retry-acquire')
    k, a = k + 4, a + 6
  elseif op == 'release' then
    reply = release(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 3, a + 3
  elseif op == 'release-to' then
    reply = release(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2], KEYS[k + 3], ARGV[a + 3],
                    ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
    k, a = k + 4, a + 7
  elseif op == 'set' then
    reply = set_permits(KEYS[k], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 3, a + 3
  elseif op == 'add' then
    reply = add_permits(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
    k, a = k + 3, a + 3
  elseif op == 'available' then
    reply = available(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a + 1])
    k, a = k + 3, a + 2
  else
    reply = redis.error_reply('ERR unknown permits operation')
    a = #ARGV + 1  -- the rest of the items cannot be found either
  end
  return reply
end

-- include: run_items.lua
