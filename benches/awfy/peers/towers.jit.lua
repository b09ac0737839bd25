-- Are We Fast Yet: Towers, as benches/awfy/programs/towers.masm: the towers of Hanoi
-- with 14 disks, each pile a linked list of disk objects; moving the top 13 disks takes
-- 8191 moves, which a run returns. Runs the benchmark n times (argv[1]), checks every
-- result and prints the last one.
-- LuaJIT port of towers.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- plain numbers (`math.tointeger` does not exist in LuaJIT); the same algorithm and
-- printed result.
local Towers = {}
Towers.__index = Towers

local function new_disk(size)
  return { size = size, next = nil }
end

function Towers:push_disk(disk, pile)
  local top = self.piles[pile]
  if top ~= nil and disk.size >= top.size then
    error("Cannot put a big disk on a smaller one")
  end
  disk.next = top
  self.piles[pile] = disk
end

function Towers:pop_disk_from(pile)
  local top = self.piles[pile]
  if top == nil then
    error("Attempting to remove a disk from an empty pile")
  end
  self.piles[pile] = top.next
  top.next = nil
  return top
end

function Towers:move_top_disk(from_pile, to_pile)
  self:push_disk(self:pop_disk_from(from_pile), to_pile)
  self.moves_done = self.moves_done + 1
end

function Towers:build_tower_at(pile, disks)
  for i = disks, 0, -1 do
    self:push_disk(new_disk(i), pile)
  end
end

function Towers:move_disks(disks, from_pile, to_pile)
  if disks == 1 then
    self:move_top_disk(from_pile, to_pile)
  else
    local other_pile = (6 - from_pile) - to_pile
    self:move_disks(disks - 1, from_pile, other_pile)
    self:move_top_disk(from_pile, to_pile)
    self:move_disks(disks - 1, other_pile, to_pile)
  end
end

local function benchmark()
  -- three empty piles, 1 to 3 (the suite's 0 to 2)
  local t = setmetatable({ piles = {}, moves_done = 0 }, Towers)
  t:build_tower_at(1, 13)
  t.moves_done = 0
  t:move_disks(13, 1, 2)
  return t.moves_done
end

local n = tonumber(arg[1]) or 1000
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 8191 then error("Towers: the result is not 8191 but " .. result) end
end
print(result)
