-- Watchdog renewal of many read holds in one call, grouped by lock: KEYS[2j-1] is a read-write
-- lock, KEYS[2j] the prefix of its timeout keys; after ARGV[1] (the lease) and ARGV[2], each lock
-- has the number of its owners in the batch, then those reading owners of this client, then the key
-- of each one's first level (`<prefix>:<owner>:rwlock_timeout:1`: made by the client, as making
-- strings costs Redis more than reading them, about a third of a renewal's time). Every level
-- of an owner's read hold gets the lease again (a level's key that expired meanwhile is made again:
-- the owner still reads), and the hash lives at least as long: the counts of a lock's owners are
-- read with one command and its expiry set once, however many of its readers the batch renews.
-- Other owners' reads are not renewed, so a dead client's reads end with their leases; and with
-- ARGV[2] = '1' (one call in several: it costs), a lock with fields beyond this batch's readers has
-- some of them looked at, so that a reader all of whose levels are gone leaves the hash (a dead
-- client's field would otherwise stay as long as live readers keep the hash). Returns one flag per
-- owner, in their order: 1 renewed, 0 the owner no longer reads (also when the key now holds
-- another type), 2 its count is past the re-entry limit (tampered with): nothing is renewed, and
-- the hold ends with its lease.
-- include: hold_depth.lua

-- The hash lives at least `lease` more: one command on Redis 7 (GT never shortens the time that
-- another client's longer lease gave it), a look and a set before.
local function extend(lock, lease)
  if type(redis.pcall('pexpire', lock, lease, 'GT')) ~= 'table' then return end
  if redis.call('pttl', lock) < tonumber(lease) then redis.call('pexpire', lock, lease) end
end

-- Fields of `lock` looked at per call beyond this batch's own readers: every other reader of a
-- lock with few, a sample of a crowd (each call takes another).
local sample_size = 16

-- Drops the readers of `lock` in a sample, other than this batch's (`ours`, `n` of them), all of
-- whose levels are gone.
local function drop_dead_readers(lock, base, ours, n)
  if redis.call('hlen', lock) <= n + 1 then return end  -- `mode` and ours: nobody else
  local sample = redis.pcall('hrandfield', lock, sample_size, 'withvalues')
  if type(sample) ~= 'table' or sample.err then return end  -- (before Redis 6.2: no sample)
  for i = 1, #sample, 2 do
    local field, count = sample[i], tonumber(sample[i + 1])
    if count and count >= 1 and field ~= 'mode' and not ours[field] and string.sub(field, -6) ~= ':write' then
      local levels = {}
      local prefix = base .. ':' .. field .. ':rwlock_timeout:'
      for level = 1, math.min(count, max_depth) do levels[level] = prefix .. level end
      if redis.call('exists', unpack(levels)) == 0 then redis.call('hdel', lock, field) end
    end
  end
end

local sweeps = ARGV[2] == '1'
local lease = ARGV[1]
local renewed, r = {}, 0
local a = 3  -- the next lock's count of owners
for j = 1, #KEYS / 2 do
  local lock, base, n = KEYS[2 * j - 1], KEYS[2 * j], tonumber(ARGV[a])
  local counts = redis.pcall('hmget', lock, unpack(ARGV, a + 1, a + n))
  if counts.err then counts = {} end  -- another type: nobody reads
  local ours, held = sweeps and {}, 0
  for i = 1, n do
    local count = counts[i] and tonumber(counts[i]) or 0
    local flag = 0
    if count > max_depth then
      flag = 2
    elseif count > 0 then
      local first = ARGV[a + n + i]  -- this owner's first level's key
      for level = 1, count do
        -- Moving an expiry costs less than writing a key; one that expired meanwhile is made again.
        local key = level == 1 and first or string.sub(first, 1, -2) .. level
        if redis.call('pexpire', key, lease) == 0 then redis.call('set', key, '1', 'PX', lease) end
      end
      held = held + 1
      if ours then ours[ARGV[a + i]] = true end
      flag = 1
    end
    r = r + 1
    renewed[r] = flag
  end
  if held > 0 then
    extend(lock, lease)
    if ours then drop_dead_readers(lock, base, ours, held) end
  end
  a = a + 2 * n + 1
end
return renewed
