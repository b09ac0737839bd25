-- Array fill and sum over n ints: a[i] = bit.bxor(i * 7, i), then the sum; n from argv[1],
-- default 10^7.
-- LuaJIT port of arraysum.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `bit.bxor` (the values fit in 31 bits); the same algorithm and printed result.
local n = tonumber(arg[1]) or 10000000
local a = {}
for i = 0, n - 1 do a[i + 1] = bit.bxor(i * 7, i) end
local sum = 0
for i = 1, n do sum = sum + a[i] end
print(string.format("%d", sum))
