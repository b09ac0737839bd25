-- A counting hash table on two arrays (open addressing, linear probing, the slot a
-- remainder by the capacity held in a field): m pseudo-random keys counted through a
-- function call each, then the keys 1..lookups looked up through another; m from
-- argv[1], default 60000.
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
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  local k = (seed >> 8) % nkeys + 1
  put(t, k, 1)
end
local sum = 0
for k = 1, lookups do
  sum = sum + get(t, k) * k
end
print(t.count)
print(sum)
