-- Takeuchi's function tak(n, 16, 8) (n from argv[1], default 26) by plain recursion.
local function tak(x, y, z)
  if y < x then
    return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
  end
  return z
end
print(tak(tonumber(arg[1]) or 26, 16, 8))
