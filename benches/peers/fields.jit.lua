-- Object field reads and writes, n iterations: o.x = o.x + i; o.y = bxor53(o.y, o.x).
-- Prints o.x and o.y; n from argv[1], default 10^7.
-- LuaJIT port of fields.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bxor53` (below): o.x passes 2^32; the same algorithm and printed result.
-- x xor y for integers in [0, 2^53) held in doubles (LuaJIT's `bit` works on 32 bits):
-- the high and low 32-bit halves apart, each made non-negative again.
local function bxor53(x, y)
  local xl, yl = x % 4294967296, y % 4294967296
  local lo = bit.bxor(xl, yl) % 4294967296
  local hi = bit.bxor((x - xl) / 4294967296, (y - yl) / 4294967296) % 4294967296
  return hi * 4294967296 + lo
end
local n = tonumber(arg[1]) or 10000000
local o = { x = 0, y = 0 }
for i = 0, n - 1 do
  o.x = o.x + i
  o.y = bxor53(o.y, o.x)
end
print(o.x)
print(o.y)
