-- Deletes the lock whoever holds it and wakes its waiters. KEYS[1] lock hash, ARGV[1] its channel.
-- Returns 1 if a lock was deleted, 0 if it was free, {1, error} if it was deleted but the unlock
-- message was refused (an ACL without the channel); a key of another type is an error and stays.
-- include: publish.lua
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
redis.call('del', KEYS[1])
local told = redis.pcall(publish_command, ARGV[1], '0')
if type(told) == 'table' then return {1, told} end
return 1
