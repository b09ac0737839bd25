-- n generations (argv[1], default 300) of Conway's life on a 100 x 100 grid with a dead
-- border, two tables of 102 x 102 cells in turn; the live cells at the end.
local n = tonumber(arg[1]) or 300
local W = 100
local S = W + 2
local CELLS = S * S
local a, b = {}, {}
for p = 1, CELLS do
  a[p] = 0
  b[p] = 0
end
local seed = 7
for y = 1, W do
  for x = 1, W do
    seed = (seed * 1309 + 13849) & 65535
    a[y * S + x + 1] = (seed >> 5) & 1
  end
end
for g = 1, n do
  for y = 1, W do
    local p = y * S + 2
    for x = 1, W do
      local up, down = p - S, p + S
      local c = a[up - 1] + a[up] + a[up + 1] + a[p - 1] + a[p + 1]
        + a[down - 1] + a[down] + a[down + 1]
      local t = 0
      if c == 3 then
        t = 1
      elseif c == 2 then
        t = a[p]
      end
      b[p] = t
      p = p + 1
    end
  end
  a, b = b, a
end
local live = 0
for p = 1, CELLS do
  live = live + a[p]
end
print(live)
