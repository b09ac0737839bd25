-- String-free integer hashing: each i below n goes through a 32-bit integer mixer and the
-- hashes are summed; n from argv[1], default 10^7.
-- LuaJIT port of hash.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.bxor`, `math.floor` of a division and `mul32` (below) for the 64-bit product masked
-- to 32 bits, and the sum (past 2^53) kept in two parts; the same algorithm and printed
-- result.
-- (x * 0x45d9f3b) mod 2^32 for x below 2^32, without a product above 2^53: the
-- multiplier split into 16-bit halves. bit's results are signed 32-bit, made
-- non-negative with `% 2^32`.
local function mul32(x)
  return (x * 0x9f3b + ((x * 0x45d) % 65536) * 65536) % 4294967296
end
local function xorshift16(x)
  return bit.bxor(math.floor(x / 65536), x) % 4294967296
end
local n = tonumber(arg[1]) or 10000000
-- The sum passes 2^53 (a double's exact range): kept as hi * 2^32 + lo, lo below 2^32.
local hi, lo = 0, 0
for i = 0, n - 1 do
  local x = mul32(xorshift16(i))
  x = mul32(xorshift16(x))
  x = xorshift16(x)
  lo = lo + x
  if lo >= 4294967296 then lo = lo - 4294967296; hi = hi + 1 end
end
-- hi * 2^32 + lo in decimal: 2^32 = 42 * 10^8 + 94967296, each part exact in a double.
local low = hi * 94967296 + lo
local top = hi * 42 + math.floor(low / 100000000)
if top > 0 then
  print(string.format("%d%08d", top, low % 100000000))
else
  print(string.format("%d", low))
end
