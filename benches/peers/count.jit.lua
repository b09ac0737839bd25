-- The plainest loop: s = s + i for i below n; n from argv[1], default 10^8.
-- LuaJIT port of count.lua (for `luajit -joff`): the sum printed with `%d`, as LuaJIT prints a
-- number past 10^14 in exponent form (the sum stays below 2^53, exact in a double); the
-- same algorithm and printed result.
local n = tonumber(arg[1]) or 100000000
local s = 0
for i = 0, n - 1 do
  s = s + i
end
print(string.format("%d", s))
