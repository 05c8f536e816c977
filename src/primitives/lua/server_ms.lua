-- Redis server time in ms: waiters' liveness is judged by one clock, not by the clients' clocks.
local function server_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
