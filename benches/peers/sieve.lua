-- Sieve of Eratosthenes up to n: prints the number of primes <= n; n from argv[1], default 10^7.
local n = tonumber(arg[1]) or 10000000
local composite = {}
for i = 0, n do composite[i] = false end
local i = 2
while i * i <= n do
  if not composite[i] then
    for j = i * i, n, i do composite[j] = true end
  end
  i = i + 1
end
local count = 0
for k = 2, n do
  if not composite[k] then count = count + 1 end
end
print(count)
