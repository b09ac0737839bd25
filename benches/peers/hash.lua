-- String-free integer hashing: each i below n goes through a 32-bit integer mixer and the
-- hashes are summed; n from argv[1], default 10^7.
local n = tonumber(arg[1]) or 10000000
local s = 0
for i = 0, n - 1 do
  local x = ((i >> 16) ~ i) * 0x45d9f3b & 0xffffffff
  x = ((x >> 16) ~ x) * 0x45d9f3b & 0xffffffff
  x = (x >> 16) ~ x
  s = s + x
end
print(s)
