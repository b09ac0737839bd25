-- Are We Fast Yet: Sieve, as benches/awfy/programs/sieve.masm: the sieve of Eratosthenes
-- over 5000 booleans; a run returns the number of primes up to 5000 (669). Runs the
-- benchmark n times (argv[1]), checks every result and prints the last one.
-- flags[i] is the suite's flags[i - 1]: Lua's arrays count from 1.
-- LuaJIT port of sieve.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- plain numbers (`math.tointeger` does not exist in LuaJIT); the same algorithm and
-- printed result.
local function sieve(flags, size)
  local prime_count = 0
  for i = 2, size do
    if flags[i] then
      prime_count = prime_count + 1
      local k = i + i
      while k <= size do
        flags[k] = false
        k = k + i
      end
    end
  end
  return prime_count
end

local function benchmark()
  local flags = {}
  for i = 1, 5000 do
    flags[i] = true
  end
  return sieve(flags, 5000)
end

local n = tonumber(arg[1]) or 5000
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 669 then error("Sieve: the result is not 669 but " .. result) end
end
print(result)
