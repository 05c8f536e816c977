-- Acquires and releases of reentrant locks in Redisson's layout: hash KEYS[1] maps an owner to its
-- hold count, and the hash's PEXPIRE is the lease; every fresh hold gets a fencing token from the
-- token key. One call carries one or more of them: the connection merges adjacent calls, because
-- Redis spends about as much time on a script call as on the commands inside a lock call.
-- items: 2 keys, 7 arguments
--   keys: the lock hash, its token key
--   arguments: 'acquire' or 'release', owner, lease in ms, '' or the hold count before an attempt
--              whose outcome was lost with a connection; for a release also the lock's channel,
--              and '' or the owner to hand the lock to and its lease in ms
-- Returns the reply of acquire.lua or release.lua; for more than one item, an array of them.
-- Counts and PTTLs are integers, tokens decimal strings (next_token.lua says why).
-- An item's failure must neither stop the items after it nor undo the ones before: its reads come
-- before its writes, and the commands that can fail go through pcall and end only that item.
-- include: next_token.lua
-- include: acquire.lua
-- include: release.lua

local function run(i)
  local a = 7 * i
  if ARGV[a - 6] == 'acquire' then
    return acquire(KEYS[2 * i - 1], KEYS[2 * i], ARGV[a - 5], ARGV[a - 4], ARGV[a - 3])
  end
  return release(KEYS[2 * i - 1], KEYS[2 * i], ARGV[a - 5], ARGV[a - 4], ARGV[a - 3], ARGV[a - 2],
                 ARGV[a - 1], ARGV[a])
end

if #KEYS == 2 then
  return run(1)  -- one call alone answers without the array: a table costs Redis time
end
local replies = {}
for i = 1, #KEYS / 2 do
  replies[i] = run(i)
end
return replies
