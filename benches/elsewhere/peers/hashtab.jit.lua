-- A counting hash table on two arrays (open addressing, linear probing, the slot a
-- remainder by the capacity held in a field): m pseudo-random keys counted through a
-- function call each, then the keys 1..lookups looked up through another; m from
-- argv[1], default 60000.
-- LuaJIT port of hashtab.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `lcg31` (below) for the 64-bit product masked to 31 bits and `math.floor` of a division
-- for `>>`; the same algorithm and printed result.
-- (a * b + c) mod 2^31 without a product above 2^53 (a double holds integers up to 2^53
-- exactly, and a * b here reaches 2^61): b split into 16-bit halves.
local function lcg31(a, b, c)
  local lo = b % 65536
  local hi = (b - lo) / 65536
  return (a * lo + ((a * hi) % 32768) * 65536 + c) % 2147483648
end
local m = tonumber(arg[1]) or 60000
local nkeys = 1000000
local lookups = 600000
local cap = 100003

local function put(t, k, v)
  local keys = t.keys
  local h = k % t.cap
  while true do
    if keys[h + 1] == k then
      break
    end
    if keys[h + 1] == 0 then
      keys[h + 1] = k
      t.count = t.count + 1
      break
    end
    h = h + 1
    if h >= t.cap then
      h = 0
    end
  end
  t.vals[h + 1] = t.vals[h + 1] + v
  return 0
end

local function get(t, k)
  local keys = t.keys
  local h = k % t.cap
  while true do
    if keys[h + 1] == k then
      return t.vals[h + 1]
    end
    if keys[h + 1] == 0 then
      return 0
    end
    h = h + 1
    if h >= t.cap then
      h = 0
    end
  end
end

local t = { keys = {}, vals = {}, cap = cap, count = 0 }
for i = 1, cap do
  t.keys[i] = 0
  t.vals[i] = 0
end
local seed = 42
for _ = 1, m do
  seed = lcg31(seed, 1103515245, 12345)
  local k = math.floor(seed / 256) % nkeys + 1
  put(t, k, 1)
end
local sum = 0
for k = 1, lookups do
  sum = sum + get(t, k) * k
end
print(t.count)
print(sum)
