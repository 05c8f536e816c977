-- Heartbeats of fair lock waiters, many in one call: waiter i has the keys lock, queue and alive at
-- KEYS[3i-2..3i] and its owner at ARGV[i+1]; ARGV[1] is the liveness in ms. Each waiter still
-- queued counts as alive for the liveness from now (server time); dead waiters around it leave.
-- Returns one flag per waiter: 1 queued, 2 queued at the head while the lock is free (its call
-- may have been lost: it should try), 0 not queued any more (its place was lost, with a restart
-- of the server, say: it should try again, which queues it anew).
-- include: server_ms.lua
-- include: fair_queue.lua

local liveness = tonumber(ARGV[1])
local now = server_ms()
local flags = {}
for i = 1, #KEYS / 3 do
  local lock, queue, alive, owner = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i], ARGV[i + 1]
  local queued = redis.pcall('zscore', queue, owner)
  if type(queued) ~= 'string' then
    flags[i] = 0
  else
    keep_place(queue, alive, owner, now, liveness)
    if live_head(queue, alive, now) == owner and redis.call('exists', lock) == 0 then
      flags[i] = 2
    else
      flags[i] = 1
    end
  end
end
return flags
