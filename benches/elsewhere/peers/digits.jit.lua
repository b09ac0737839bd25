-- Digit sums of 1..n (a while loop of `% 10` and `// 10`), their total, and how many of
-- the numbers their digit sum divides; n from argv[1], default 1000000.
-- LuaJIT port of digits.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `math.floor` of a division for `//`; the same algorithm and printed result.
local n = tonumber(arg[1]) or 1000000
local total, count = 0, 0
for i = 1, n do
  local m, ds = i, 0
  while m > 0 do
    ds = ds + m % 10
    m = math.floor(m / 10)
  end
  total = total + ds
  if i % ds == 0 then
    count = count + 1
  end
end
print(total)
print(count)
