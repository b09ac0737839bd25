-- binary-trees (the Computer Language Benchmarks Game program); depth from argv[1],
-- default 16.
-- Prints the stretch tree's check, the number of trees and total check for each depth, then
-- the long-lived tree's check, one number a line.
-- LuaJIT port of binarytrees.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.lshift`; the same algorithm and printed result.
local function make(d)
  if d == 0 then return { false, false } end
  return { make(d - 1), make(d - 1) }
end

local function check(t)
  if not t[1] then return 1 end
  return 1 + check(t[1]) + check(t[2])
end

local max_depth = math.max(tonumber(arg[1]) or 16, 6)
print(check(make(max_depth + 1)))
local long_lived = make(max_depth)
for depth = 4, max_depth, 2 do
  local iterations = bit.lshift(1, max_depth - depth + 4)
  local total = 0
  for _ = 1, iterations do total = total + check(make(depth)) end
  print(iterations)
  print(total)
end
print(check(long_lived))
