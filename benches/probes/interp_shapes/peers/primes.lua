-- The count of primes below n by trial division of each odd m by every odd d with
-- d*d <= m; n from argv[1], default 400000.
local n = tonumber(arg[1]) or 400000
local count = 1
for m = 3, n - 1, 2 do
  local prime = 1
  local d = 3
  while d * d <= m do
    if m % d == 0 then
      prime = 0
      break
    end
    d = d + 2
  end
  count = count + prime
end
print(count)
