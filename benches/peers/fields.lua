-- Object field reads and writes, n iterations: o.x = o.x + i; o.y = o.y ~ o.x.
-- Prints o.x and o.y; n from argv[1], default 10^7.
local n = tonumber(arg[1]) or 10000000
local o = { x = 0, y = 0 }
for i = 0, n - 1 do
  o.x = o.x + i
  o.y = o.y ~ o.x
end
print(o.x)
print(o.y)
