-- The product of two n x n integer matrices stored row by row in flat tables, then the
-- sum of its cells; n from argv[1], default 200.
local n = tonumber(arg[1]) or 200
local a, b, c = {}, {}, {}
for i = 0, n * n - 1 do
  a[i + 1] = i % 7
  b[i + 1] = i % 9 - 3
end
for i = 0, n - 1 do
  local row = i * n
  for j = 0, n - 1 do
    local s = 0
    for k = 0, n - 1 do
      s = s + a[row + k + 1] * b[k * n + j + 1]
    end
    c[row + j + 1] = s
  end
end
local s = 0
for i = 1, n * n do
  s = s + c[i]
end
print(s)
