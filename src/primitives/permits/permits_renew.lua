-- Watchdog renewal of many permits in one call, grouped by semaphore: KEYS[2j-1] and KEYS[2j] are
-- a semaphore's leases and holders (permits_calls.lua); after ARGV[1] (the lease), each semaphore
-- has the number of its permits in the batch, then their ids. A permit whose lease has not ended
-- by server time gets the lease again; one that ended (another client may be about to count it
-- free) or is gone is not renewed. Returns one flag per permit, in their order: 1 renewed, 0 gone
-- (also when a key now holds another type).
-- include: server_ms.lua

local now = server_ms()
local lease = tonumber(ARGV[1])
local flags = {}
local a = 2
for j = 1, #KEYS, 2 do
  local leases, holders = KEYS[j], KEYS[j + 1]
  local n = tonumber(ARGV[a])
  local renewed = false
  for i = a + 1, a + n do
    local ends = redis.pcall('zscore', leases, ARGV[i])
    if type(ends) == 'string' and tonumber(ends) > now then
      redis.call('zadd', leases, 'XX', now + lease, ARGV[i])
      flags[#flags + 1] = 1
      renewed = true
    else
      flags[#flags + 1] = 0
    end
  end
  -- The two keys always expire together (permits_calls.lua): one look.
  if renewed and redis.call('pttl', leases) < lease then
    redis.call('pexpire', leases, lease)
    redis.call('pexpire', holders, lease)
  end
  a = a + n + 1
end
return flags
