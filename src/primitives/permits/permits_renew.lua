-- Watchdog renewal of many permits in one call, grouped by semaphore: KEYS[2j-1] and KEYS[2j] are
-- a semaphore's leases and holders (permits_calls.lua); after ARGV[1] (the lease), each semaphore
-- has the number of its permits in the batch, then their ids. A permit whose lease has not ended
-- by server time gets the lease again; one that ended (another client may be about to count it
-- free) or is gone is not renewed. Returns one flag per permit, in their order: 1 renewed, 0 gone
-- (also when a key now holds another type).
-- include: server_ms.lua
-- include: permits_keys.lua

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
  if renewed then
    local keys_until = redis.pcall('hget', holders, 'keys_until')
    if type(keys_until) ~= 'table' then keep_permits_keys(leases, holders, tonumber(keys_until), now, lease) end
  end
  a = a + n + 1
end
return flags
