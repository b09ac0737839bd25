-- The sum of i xor j over an n x n square of indices; n from argv[1], default 5000.
-- LuaJIT port of xorsum.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.bxor`; the same algorithm and printed result.
local n = tonumber(arg[1]) or 5000
local s = 0
for i = 0, n - 1 do
  for j = 0, n - 1 do
    s = s + bit.bxor(i, j)
  end
end
print(s)
