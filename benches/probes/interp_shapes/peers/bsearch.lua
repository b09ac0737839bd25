-- n binary searches (argv[1], default 300000) for pseudo-random keys in a sorted table
-- of 100000 elements (element i is 3i+1, from 0): the number of keys found and their sum.
local n = tonumber(arg[1]) or 300000
local M = 100000
local a = {}
for i = 0, M - 1 do
  a[i + 1] = 3 * i + 1
end
local seed = 42
local found, sum = 0, 0
for q = 1, n do
  seed = (seed * 1103515245 + 12345) & 2147483647
  local key = seed % 300000
  local lo, hi = 1, M
  while lo <= hi do
    local mid = (lo + hi) // 2
    local v = a[mid]
    if v == key then
      found = found + 1
      sum = sum + key
      break
    elseif v < key then
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
end
print(found)
print(sum)
