-- A client's heartbeat: its liveness keys (one per server, or per slot in a cluster) are kept for
-- ARGV[1] ms more. Returns one flag per key: 1 it was there, 0 it was gone (the client may have
-- been judged dead meanwhile and its waiters dropped from their queues).
local flags = {}
for i, key in ipairs(KEYS) do
  flags[i] = redis.call('set', key, '1', 'px', ARGV[1], 'get') and 1 or 0
end
return flags
