-- An integer spectral kernel: ten rounds of v = A u, then u = A^T v, over the spectral-norm
-- matrix's integer entries A(i, j) = (i + j - 1)(i + j - 2) / 2 + i (1-based), each sum
-- taken modulo 65521; prints the sum of u. n from argv[1], default 600.
local M = 65521

local function A(i, j)
  local ij = i + j - 1
  return ij * (ij - 1) // 2 + i
end

local function mul_av(n, u, v)
  for i = 1, n do
    local s = 0
    for j = 1, n do s = s + A(i, j) * u[j] end
    v[i] = s % M
  end
end

local function mul_atv(n, u, v)
  for i = 1, n do
    local s = 0
    for j = 1, n do s = s + A(j, i) * u[j] end
    v[i] = s % M
  end
end

local n = tonumber(arg[1]) or 600
local u, v = {}, {}
for i = 1, n do u[i] = 1; v[i] = 0 end
for _ = 1, 10 do
  mul_av(n, u, v)
  mul_atv(n, v, u)
end
local sum = 0
for i = 1, n do sum = sum + u[i] end
print(sum)
