-- The leases and holders of leased permits (permits_calls.lua) expire together, at the end of the
-- longest lease and at most a quarter of a lease later: each grant would otherwise read or set
-- their expiry (a command in every call), so they are extended a quarter lease beyond what is
-- needed, and the holders hash remembers until when (field 'keys_until', server ms). Returns the
-- keys' 'keys_until' from then on.
local function keep_permits_keys(leases, holders, keys_until, now, lease)
  if keys_until and keys_until >= now + lease then return keys_until end
  local life = lease + math.floor(lease / 4)
  redis.call('pexpire', leases, life)
  redis.call('pexpire', holders, life)
  redis.call('hset', holders, 'keys_until', now + life)
  return now + life
end
