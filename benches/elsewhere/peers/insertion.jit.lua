-- Insertion sort of n pseudo-random integers in a table (a while loop with two exit tests
-- shifting elements up), then a checksum of the result; n from argv[1], default 4000.
-- LuaJIT port of insertion.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `lcg31` (below) for the 64-bit product masked to 31 bits and `math.floor` of a division
-- for `>>`; the same algorithm and printed result.
-- (a * b + c) mod 2^31 without a product above 2^53 (a double holds integers up to 2^53
-- exactly, and a * b here reaches 2^61): b split into 16-bit halves.
local function lcg31(a, b, c)
  local lo = b % 65536
  local hi = (b - lo) / 65536
  return (a * lo + ((a * hi) % 32768) * 65536 + c) % 2147483648
end
local n = tonumber(arg[1]) or 4000
local a = {}
local seed = 12345
for i = 1, n do
  seed = lcg31(seed, 1103515245, 12345)
  a[i] = math.floor(seed / 65536)
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
