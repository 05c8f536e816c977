-- Runs the items of the call one after the other (`run_next` runs one and moves `a` past it).
local first = run_next()
if a > #ARGV then
  return first  -- one call alone answers without the array: a table costs Redis time
end
local replies = {first}
while a <= #ARGV do
  replies[#replies + 1] = run_next()
end
return replies
