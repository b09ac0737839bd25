-- 0/1 knapsack by dynamic programming over one table: n pseudo-random items (argv[1],
-- default 1500), capacity 5000, the best value printed.
local n = tonumber(arg[1]) or 1500
local C = 5000
local dp = {}
for c = 1, C + 1 do
  dp[c] = 0
end
local seed = 12345
for i = 1, n do
  seed = (seed * 1309 + 13849) & 65535
  local w = seed % 97 + 1
  seed = (seed * 1309 + 13849) & 65535
  local v = seed % 1000
  for c = C + 1, w + 1, -1 do
    local x = dp[c - w] + v
    if x > dp[c] then
      dp[c] = x
    end
  end
end
print(dp[C + 1])
