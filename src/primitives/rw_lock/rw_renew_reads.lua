-- Watchdog renewal of many read holds in one call: KEYS[2i-1] is a read-write lock, KEYS[2i] the
-- prefix of its timeout keys, ARGV[i+1] a reading owner of this client. Every level of the owner's
-- read hold gets the lease ARGV[1] again (a level's key that expired meanwhile is made again: the
-- owner still reads), and the hash lives at least as long: looked at once per lock, however many of
-- its readers the batch renews. Other owners' reads are not touched, so a dead client's reads end
-- with their leases. Returns one flag per owner: 1 renewed, 0 the owner no longer reads (also when
-- the key now holds another type), 2 its count is past the re-entry limit (tampered with): nothing
-- is renewed, and the hold ends with its lease.
-- include: hold_depth.lua
local renewed = {}
local extended = {}
for i = 1, #KEYS / 2 do
  local lock, base, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
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
    if not extended[lock] then
      if redis.call('pttl', lock) < tonumber(ARGV[1]) then redis.call('pexpire', lock, ARGV[1]) end
      extended[lock] = true
    end
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
