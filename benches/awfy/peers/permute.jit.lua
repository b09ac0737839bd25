-- Are We Fast Yet: Permute, as benches/awfy/programs/permute.masm: every permutation of
-- a 6-element array by recursive swapping; a run returns the number of permute calls
-- (8660). Runs the benchmark n times (argv[1]), checks every result and prints the last.
-- LuaJIT port of permute.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- plain numbers (`math.tointeger` does not exist in LuaJIT); the same algorithm and
-- printed result.
local Permute = {}
Permute.__index = Permute

function Permute.new()
  return setmetatable({ count = 0, v = nil }, Permute)
end

function Permute:swap(i, j)
  local tmp = self.v[i]
  self.v[i] = self.v[j]
  self.v[j] = tmp
end

-- Lua's arrays count from 1: the suite's swap(n - 1, i) for i from n - 1 down to 0 is
-- swap(n, i) for i from n down to 1 here.
function Permute:permute(n)
  self.count = self.count + 1
  if n ~= 0 then
    local n1 = n - 1
    self:permute(n1)
    for i = n, 1, -1 do
      self:swap(n, i)
      self:permute(n1)
      self:swap(n, i)
    end
  end
end

local function benchmark()
  local p = Permute.new()
  p.v = { 0, 0, 0, 0, 0, 0 }
  p:permute(6)
  return p.count
end

local n = tonumber(arg[1]) or 2000
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 8660 then error("Permute: the result is not 8660 but " .. result) end
end
print(result)
