-- Are We Fast Yet: Queens, as benches/awfy/programs/queens.masm: eight queens by
-- backtracking over free rows and diagonals, ten times a run; a run returns whether every
-- placement succeeded (true, printed as 1). Runs the benchmark n times (argv[1]), checks
-- every result and prints the last one.
-- LuaJIT port of queens.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- plain numbers (`math.tointeger` does not exist in LuaJIT); the same algorithm and
-- printed result.
local Queens = {}
Queens.__index = Queens

local function filled(size, value)
  local a = {}
  for i = 1, size do
    a[i] = value
  end
  return a
end

function Queens.new()
  local q = setmetatable({}, Queens)
  q.free_rows = filled(8, true)
  q.free_maxs = filled(16, true)
  q.free_mins = filled(16, true)
  q.queen_rows = filled(8, -1)
  return q
end

-- Rows and columns count from 1, as Lua's arrays: the suite's diagonals c + r and
-- c - r + 7 (from 0) are c + r - 1 and c - r + 8 here.
function Queens:get_row_column(r, c)
  return self.free_rows[r] and self.free_maxs[c + r - 1] and self.free_mins[c - r + 8]
end

function Queens:set_row_column(r, c, v)
  self.free_rows[r] = v
  self.free_maxs[c + r - 1] = v
  self.free_mins[c - r + 8] = v
end

function Queens:place_queen(c)
  for r = 1, 8 do
    if self:get_row_column(r, c) then
      self.queen_rows[r] = c
      self:set_row_column(r, c, false)
      if c == 8 then
        return true
      end
      if self:place_queen(c + 1) then
        return true
      end
      self:set_row_column(r, c, true)
    end
  end
  return false
end

local function queens()
  return Queens.new():place_queen(1)
end

local function benchmark()
  local result = true
  for _ = 1, 10 do
    result = result and queens()
  end
  return result
end

local n = tonumber(arg[1]) or 3000
local result = false
for _ = 1, n do
  result = benchmark()
  if result ~= true then error("Queens: the result is not true") end
end
print(result and 1 or 0)
