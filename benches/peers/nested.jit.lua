-- Nested loops over a 2-D index into an n x n grid stored row by row in one table:
-- a[i * n + j] = bit.bxor(i, j), then the sum of every cell; n from argv[1], default 3000.
-- LuaJIT port of nested.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.bxor`; the same algorithm and printed result.
local n = tonumber(arg[1]) or 3000
local a = {}
for i = 0, n - 1 do
  for j = 0, n - 1 do
    a[i * n + j + 1] = bit.bxor(i, j)
  end
end
local s = 0
for i = 0, n - 1 do
  local row = i * n
  for j = 1, n do
    s = s + a[row + j]
  end
end
print(s)
