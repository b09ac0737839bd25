-- The start below n with the longest Collatz chain, and its length: odd steps by
-- `x & 1`, halving by `x >> 1`; n from argv[1], default 200000.
local n = tonumber(arg[1]) or 200000
local best, bestlen = 1, 0
for i = 1, n - 1 do
  local x = i
  local len = 0
  while x ~= 1 do
    if x & 1 == 0 then
      x = x >> 1
    else
      x = 3 * x + 1
    end
    len = len + 1
  end
  if len > bestlen then
    best = i
    bestlen = len
  end
end
print(best)
print(bestlen)
