-- The total number of Collatz steps of every start from 1 to n; n from argv[1], default
-- 300000.
-- LuaJIT port of collatz.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `/ 2` for `// 2` (x is even there, so the quotient is exact); the same algorithm and
-- printed result.
local n = tonumber(arg[1]) or 300000
local total = 0
for i = 1, n do
  local x = i
  local steps = 0
  while x ~= 1 do
    if x % 2 == 0 then
      x = x / 2
    else
      x = 3 * x + 1
    end
    steps = steps + 1
  end
  total = total + steps
end
print(total)
