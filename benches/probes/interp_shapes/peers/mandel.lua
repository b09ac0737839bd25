-- The Mandelbrot set on an n x n grid (argv[1], default 600) in 12-bit fixed point, at
-- most 50 iterations a point: the sum of every point's iteration count.
local n = tonumber(arg[1]) or 600
local total = 0
for y = 0, n - 1 do
  local ci = y * 8192 // n - 4096
  for x = 0, n - 1 do
    local cr = x * 12288 // n - 8192
    local zr, zi, i = 0, 0, 0
    while i < 50 do
      local zr2 = (zr * zr) >> 12
      local zi2 = (zi * zi) >> 12
      if zr2 + zi2 > 16384 then
        break
      end
      zi = ((zr * zi) // 2048) + ci
      zr = zr2 - zi2 + cr
      i = i + 1
    end
    total = total + i
  end
end
print(total)
