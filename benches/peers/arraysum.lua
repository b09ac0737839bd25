-- Array fill and sum over n ints: a[i] = (i * 7) ~ i, then the sum; n from argv[1], default 10^7.
local n = tonumber(arg[1]) or 10000000
local a = {}
for i = 0, n - 1 do a[i + 1] = (i * 7) ~ i end
local sum = 0
for i = 1, n do sum = sum + a[i] end
print(sum)
