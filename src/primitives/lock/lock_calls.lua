-- Acquires and releases of reentrant locks in Redisson's layout: a lock hash maps an owner to its
-- hold count, and the hash's PEXPIRE is the lease; every fresh hold gets a fencing token from the
-- lock's token key. One call carries one or more of them: the connection merges adjacent calls,
-- because Redis spends about as much time on a script call as on the commands inside a lock call.
-- items: each led by its operation, which says how many keys and arguments follow:
--   acquire        keys: lock, token key   arguments: owner, lease in ms (an owner that holds
--                                          nothing of the lock on the client's books)
--   retry-acquire  keys: lock, token key   arguments: owner, lease in ms, the hold count on the
--                                          client's books: of a nested acquire, or before an
--                                          attempt whose outcome was lost with a connection
--   release        keys: lock              arguments: owner, lease in ms, the lock's channel
--   release-with   keys: lock, token key   arguments: owner, lease in ms, the lock's channel,
--                                          '' or the hold count before a lost attempt (with the
--                                          token of a release made again: release_again.lua), ''
--                                          or the owner to hand the lock to, and its lease in ms
-- A fresh hold's fencing counter expires (next_token.lua); `acquire+`, `retry-acquire+` and
-- `release-with+` are the same operations with a counter that never does.
-- (Only what an operation needs is sent: every argument costs Redis time to parse and to pass to
-- Lua.) Returns the reply of acquire.lua or release.lua; for more than one item, an array of them.
-- Counts and PTTLs are integers, tokens decimal strings (next_token.lua says why).
-- An item's failure must neither stop the items after it nor undo the ones before: its reads come
-- before its writes, and the commands that can fail go through pcall and end only that item.
-- include: publish.lua
-- include: next_token.lua
-- include: hold_depth.lua
-- include: reentry.lua
-- include: release_again.lua
-- include: acquire.lua
-- include: release.lua

local k, a = 1, 1  -- the next item's first key and its operation

local function run_next()
  local op = ARGV[a]
  local reply
  if op == 'acquire' or op == 'acquire+' then
    reply = acquire(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], '', op == 'acquire+')
    k, a = k + 2, a + 3
  elseif op == 'retry-acquire' or op == 'retry-acquire+' then
    reply = acquire(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], op == 'retry-acquire+')
    k, a = k + 2, a + 4
  elseif op == 'release' then
    reply = release(KEYS[k], nil, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], '', '', '', false)
    k, a = k + 1, a + 4
  elseif op == 'release-with' or op == 'release-with+' then
    reply = release(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4],
                    ARGV[a + 5], ARGV[a + 6], op == 'release-with+')
    k, a = k + 2, a + 7
  else
    reply = redis.error_reply('ERR unknown lock operation')
    a = #ARGV + 1  -- the rest of the items cannot be found either
  end
  return reply
end

-- include: run_items.lua
