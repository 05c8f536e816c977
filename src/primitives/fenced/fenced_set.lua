-- A resource guarded by fencing tokens: sets KEYS[2] to ARGV[2] if the token ARGV[1] is not lower
-- than the highest token accepted so far (kept in KEYS[1]; an equal token passes, so the nested
-- holds of one owner, which share their token, may all write), and, given ARGV[3], only if KEYS[2]
-- still holds ARGV[3] ('' for no value: compare-and-set). Tokens are compared as decimal strings,
-- exact up to 2^63 - 1. Returns 1 if written, 0 if rejected.
local function lower(a, b)
  return #a < #b or (#a == #b and a < b)
end
if lower(ARGV[1], redis.call('get', KEYS[1]) or '0') then
  return 0
end
if ARGV[3] and (redis.call('get', KEYS[2]) or '') ~= ARGV[3] then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[2])
return 1
