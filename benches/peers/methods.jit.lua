-- Method calls in a loop: an instance method with two arguments, acc:add(i, 7), which
-- does total = total + bit.bxor(a, b), n times; n from argv[1], default 10^7.
-- LuaJIT port of methods.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.bxor`; the same algorithm and printed result.
local Acc = {}
Acc.__index = Acc

function Acc.new()
  return setmetatable({ total = 0 }, Acc)
end

function Acc:add(a, b)
  self.total = self.total + bit.bxor(a, b)
end

local n = tonumber(arg[1]) or 10000000
local acc = Acc.new()
for i = 0, n - 1 do
  acc:add(i, 7)
end
print(acc.total)
