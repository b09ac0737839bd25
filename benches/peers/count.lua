-- The plainest loop: s = s + i for i below n; n from argv[1], default 10^8.
local n = tonumber(arg[1]) or 100000000
local s = 0
for i = 0, n - 1 do
  s = s + i
end
print(s)
