-- The sum of gcd(i, j) over 1 <= i, j <= n, Euclid's algorithm in a function of its own;
-- n from argv[1], default 1000.
local n = tonumber(arg[1]) or 1000
local function gcd(a, b)
  while b ~= 0 do
    a, b = b, a % b
  end
  return a
end
local s = 0
for i = 1, n do
  for j = 1, n do
    s = s + gcd(i, j)
  end
end
print(s)
