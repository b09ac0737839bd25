-- Counting sort of n pseudo-random integers below 1000 (argv[1], default 1000000): a
-- histogram, its prefix sums, the sorted table, and a checksum of it.
local n = tonumber(arg[1]) or 1000000
local K = 1000
local a, count, b = {}, {}, {}
for v = 1, K do
  count[v] = 0
end
local seed = 99
for i = 1, n do
  seed = (seed * 1103515245 + 12345) & 2147483647
  a[i] = seed % K
end
for i = 1, n do
  local v = a[i] + 1
  count[v] = count[v] + 1
end
local s = 0
for v = 1, K do
  local c = count[v]
  count[v] = s
  s = s + c
end
for i = 1, n do
  local v = a[i]
  local c = count[v + 1]
  b[c + 1] = v
  count[v + 1] = c + 1
end
local sum = 0
for i = 1, n do
  sum = sum + b[i] * (i - 1)
end
print(sum)
