-- Bubble sort of n pseudo-random integers in a table, then a checksum of the result;
-- n from argv[1], default 3000.
-- LuaJIT port of bubble.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `% 65536` for `& 65535`; the same algorithm and printed result.
local n = tonumber(arg[1]) or 3000
local a = {}
local seed = 74755
for i = 1, n do
  seed = (seed * 1309 + 13849) % 65536
  a[i] = seed
end
for i = n - 1, 1, -1 do
  for j = 1, i do
    if a[j] > a[j + 1] then
      local t = a[j]
      a[j] = a[j + 1]
      a[j + 1] = t
    end
  end
end
local s = 0
for i = 1, n do
  s = s + a[i] * i
end
print(a[1])
print(a[n])
print(s)
