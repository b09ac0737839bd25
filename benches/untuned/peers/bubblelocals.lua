-- Bubble sort of n integers from a Park-Miller generator, the inner bound recomputed in
-- the loop's test and both neighbours read into locals before the compare-and-swap, then a
-- checksum of the result; n from argv[1], default 3000.
local n = tonumber(arg[1]) or 3000
local a = {}
local seed = 42
for i = 1, n do
  seed = seed * 16807 % 2147483647
  a[i] = seed % 100000
end
for i = 0, n - 2 do
  local j = 1
  while j < n - i do
    local x = a[j]
    local y = a[j + 1]
    if x > y then
      a[j] = y
      a[j + 1] = x
    end
    j = j + 1
  end
end
local s = 0
for i = 1, n do
  s = s + a[i] * i
end
print(a[1])
print(a[n])
print(s)
