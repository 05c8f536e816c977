-- Runs the items of the call one after the other (`run_next` runs one and moves `a` past it;
-- a call's closing 'spublish' is no item: publish.lua).
local function run_item()
  local reply = run_next()
  if ARGV[a] == 'spublish' then a = a + 1 end
  return reply
end
local first = run_item()
if a > #ARGV then
  return first  -- one call alone answers without the array: a table costs Redis time
end
local replies = {first}
while a <= #ARGV do
  replies[#replies + 1] = run_item()
end
return replies
