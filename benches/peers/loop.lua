-- An integer loop of n iterations: s = (s * 31 + i) % 1000000007; n from argv[1], default 10^8.
local n = tonumber(arg[1]) or 100000000
local s = 0
for i = 0, n - 1 do
  s = (s * 31 + i) % 1000000007
end
print(s)
