-- Are We Fast Yet: List, as benches/awfy/programs/list.masm: the recursive tail(x, y, z)
-- over linked lists of 15, 10 and 6 elements; a run returns the result's length (10).
-- Runs the benchmark n times (argv[1]), checks every result and prints the last one.
-- LuaJIT port of list.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- plain numbers (`math.tointeger` does not exist in LuaJIT); the same algorithm and
-- printed result.
local Element = {}
Element.__index = Element

function Element.new(v)
  return setmetatable({ val = v, next = nil }, Element)
end

function Element:length()
  if self.next == nil then
    return 1
  end
  return 1 + self.next:length()
end

local function make_list(length)
  if length == 0 then
    return nil
  end
  local e = Element.new(length)
  e.next = make_list(length - 1)
  return e
end

local function is_shorter_than(x, y)
  local x_tail, y_tail = x, y
  while y_tail ~= nil do
    if x_tail == nil then
      return true
    end
    x_tail = x_tail.next
    y_tail = y_tail.next
  end
  return false
end

local function tail(x, y, z)
  if is_shorter_than(y, x) then
    return tail(tail(x.next, y, z), tail(y.next, z, x), tail(z.next, x, y))
  end
  return z
end

local function benchmark()
  return tail(make_list(15), make_list(10), make_list(6)):length()
end

local n = tonumber(arg[1]) or 3500
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 10 then error("List: the result is not 10 but " .. result) end
end
print(result)
