-- Are We Fast Yet: Storage, as benches/awfy/programs/storage.masm: a tree of arrays 7
-- levels deep, 4 children a node, leaves of 1 to 10 elements sized by the suite's Random
-- generator; a run returns the number of arrays made (5461). Runs the benchmark n times
-- (argv[1]), checks every result and prints the last one.
-- LuaJIT port of storage.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `% 65536` for `& 65535`; the same algorithm and printed result.
local Random = {}
Random.__index = Random

function Random.new()
  return setmetatable({ seed = 74755 }, Random)
end

function Random:next()
  self.seed = ((self.seed * 1309) + 13849) % 65536
  return self.seed
end

local Storage = {}
Storage.__index = Storage

-- A new Object[size]: `size` elements, each false (Lua's tables have no fixed length, so
-- the elements are written as the JVM's zeroing would).
local function new_array(size)
  local a = {}
  for i = 1, size do
    a[i] = false
  end
  return a
end

function Storage:build_tree_depth(depth, random)
  self.count = self.count + 1
  if depth == 1 then
    return new_array(random:next() % 10 + 1)
  end
  local arr = {}
  for i = 1, 4 do
    arr[i] = self:build_tree_depth(depth - 1, random)
  end
  return arr
end

local function benchmark()
  local random = Random.new()
  local s = setmetatable({ count = 0 }, Storage)
  s:build_tree_depth(7, random)
  return s.count
end

local n = tonumber(arg[1]) or 1500
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 5461 then error("Storage: the result is not 5461 but " .. result) end
end
print(result)
