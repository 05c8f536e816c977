-- Watchdog renewal of many read holds in one call: KEYS[2i-1] is a read-write lock, KEYS[2i] the
-- prefix of its timeout keys, ARGV[i+2] a reading owner of this client. Every level of the owner's
-- read hold gets the lease ARGV[1] again (a level's key that expired meanwhile is made again: the
-- owner still reads), and the hash lives at least as long: looked at once per lock, however many of
-- its readers the batch renews. Other owners' reads are not renewed, so a dead client's reads end
-- with their leases; and with ARGV[2] = '1' (one call in several: it costs), a lock with fields
-- beyond this batch's readers has some of them looked at, so that a reader all of whose levels are
-- gone leaves the hash (a dead client's field would otherwise stay as long as live readers keep the
-- hash). ARGV[1] is the lease. Returns one flag per owner: 1 renewed, 0
-- the owner no longer reads (also when the key now holds another type), 2 its count is past the
-- re-entry limit (tampered with): nothing is renewed, and the hold ends with its lease.
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
local renewed = {}
local extended = {}  -- lock -> true, or when sweeping {base, ours = the owners renewed here, n = how many}
for i = 1, #KEYS / 2 do
  local lock, base, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 2]
  local held = redis.pcall('hget', lock, owner)
  local count = type(held) == 'string' and tonumber(held) or 0
  if count > max_depth then
    renewed[i] = 2
  elseif count > 0 then
    local prefix = base .. ':' .. owner .. ':rwlock_timeout:'
    for level = 1, count do
      -- Moving an expiry costs less than writing a key; one that expired meanwhile is made again.
      if redis.call('pexpire', prefix .. level, ARGV[1]) == 0 then
        redis.call('set', prefix .. level, '1', 'PX', ARGV[1])
      end
    end
    local seen = extended[lock]
    if not seen then
      extend(lock, ARGV[1])
      seen = not sweeps or {base = base, ours = {}, n = 0}
      extended[lock] = seen
    end
    if sweeps and not seen.ours[owner] then
      seen.ours[owner] = true
      seen.n = seen.n + 1
    end
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
if sweeps then
  for lock, seen in pairs(extended) do drop_dead_readers(lock, seen.base, seen.ours, seen.n) end
end
return renewed
