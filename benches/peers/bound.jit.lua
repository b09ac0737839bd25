-- A while loop whose bound is held in an object's field: while i < box.limit, s = s + i;
-- n from argv[1], default 3 * 10^7.
-- LuaJIT port of bound.lua (for `luajit -joff`): the sum printed with `%d`, as LuaJIT prints a
-- number past 10^14 in exponent form (the sum stays below 2^53, exact in a double); the
-- same algorithm and printed result.
local n = tonumber(arg[1]) or 30000000
local box = { limit = n }
local i, s = 0, 0
while i < box.limit do
  s = s + i
  i = i + 1
end
print(string.format("%d", s))
