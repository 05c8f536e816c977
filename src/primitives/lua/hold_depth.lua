-- An owner holds a lock at most this many levels deep (redisync::max_hold_depth); a deeper acquire
-- is refused with the error DEPTH and changes nothing. Loops over an owner's levels stop there
-- too, so that a hold count tampered with cannot keep Redis busy.
local max_depth = 1000

local function too_deep(lock, field)
  redis.call('hincrby', lock, field, -1)  -- the level just added is taken off again
  return redis.error_reply('DEPTH the owner holds this lock ' .. max_depth .. ' levels deep already')
end
