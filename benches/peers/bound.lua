-- A while loop whose bound is held in an object's field: while i < box.limit, s = s + i;
-- n from argv[1], default 3 * 10^7.
local n = tonumber(arg[1]) or 30000000
local box = { limit = n }
local i, s = 0, 0
while i < box.limit do
  s = s + i
  i = i + 1
end
print(s)
