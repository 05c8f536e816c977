-- A resource guarded by fencing tokens: a compare-and-set of KEYS[2] from the value ARGV[2] ('' for
-- no value) to ARGV[3], accepted only if the token ARGV[1] is not lower than the highest token
-- accepted so far (kept in KEYS[1]; an equal token passes, for the reentrant holds of one owner).
-- Tokens are compared as decimal strings, exact up to 2^63 - 1. Returns 1 if written, 0 if rejected
-- (a stale token, or a value that changed since the writer read it).
local function lower(a, b)
  return #a < #b or (#a == #b and a < b)
end
if lower(ARGV[1], redis.call('get', KEYS[1]) or '0') then
  return 0
end
if (redis.call('get', KEYS[2]) or '') ~= ARGV[2] then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[3])
return 1
