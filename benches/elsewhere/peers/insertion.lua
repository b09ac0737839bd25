-- Insertion sort of n pseudo-random integers in a table (a while loop with two exit tests
-- shifting elements up), then a checksum of the result; n from argv[1], default 4000.
local n = tonumber(arg[1]) or 4000
local a = {}
local seed = 12345
for i = 1, n do
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  a[i] = seed >> 16
end
for i = 2, n do
  local key = a[i]
  local j = i - 1
  while j >= 1 and a[j] > key do
    a[j + 1] = a[j]
    j = j - 1
  end
  a[j + 1] = key
end
local s = 0
for i = 1, n do
  s = s + a[i] * i
end
print(a[1])
print(a[n])
print(s)
