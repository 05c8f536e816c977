-- Watchdog renewal of many locks in one call: KEYS[i] is renewed to the lease ARGV[1] if ARGV[i+1]
-- still holds it. Returns one flag per key: 1 renewed, 0 the owner no longer holds it and the lock
-- is free (also when the key now holds another type: that lock is lost, the others in the batch are
-- not affected), 3 another owner holds it.
local renewed = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if held == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    renewed[i] = 1
  elseif held == 0 and redis.call('exists', KEYS[i]) == 1 then
    renewed[i] = 3
  else
    renewed[i] = 0
  end
end
return renewed
