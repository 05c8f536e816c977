-- A release made again after a change of master (the old master may have acknowledged a release
-- its successor never received) names the hold it ends: its retry argument is `<count>:<token>`,
-- the count of a last level and the fencing token of that hold. The owner's level found there is
-- another hold when the lock's counter has numbered one since: the owner's next grant, which
-- reached the new master first. That one stays.
-- Returns the retry count ('' when `retry_arg` is empty) and whether the level found is newer than
-- the hold the release was made for.
local function retry_of_release(token_key, retry_arg)
  local count, token = string.match(retry_arg, '^(%d+):(%d+)$')
  if not count then return retry_arg, false end
  local counter = redis.pcall('get', token_key)
  return count, type(counter) == 'string' and counter ~= token
end
