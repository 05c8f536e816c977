-- A resource guarded by fencing tokens: SET KEYS[2] to ARGV[2] only if the token ARGV[1] is not
-- lower than the highest token seen so far (kept in KEYS[1]). Returns 1 if written, 0 if rejected.
local token = tonumber(ARGV[1])
local highest = tonumber(redis.call('get', KEYS[1]) or '0')
if token < highest then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[2])
return 1
