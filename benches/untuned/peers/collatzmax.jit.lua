-- The start below n with the longest Collatz chain, and its length: odd steps by
-- `x & 1`, halving by `x >> 1`; n from argv[1], default 200000.
-- LuaJIT port of collatzmax.lua (for `luajit -joff`): `x % 2` and `x / 2` (exact: x is
-- even there) for `x & 1` and `x >> 1`, as the chain passes 2^32, past what LuaJIT's `bit`
-- (32-bit) holds; the same algorithm and result.
local n = tonumber(arg[1]) or 200000
local best, bestlen = 1, 0
for i = 1, n - 1 do
  local x = i
  local len = 0
  while x ~= 1 do
    if x % 2 == 0 then
      x = x / 2
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
