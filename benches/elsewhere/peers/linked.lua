-- A linked list of n nodes walked r times, summing each node's value times its position
-- modulo 1000003 into a field of the list's holder; n from argv[1], default 1000.
local n = tonumber(arg[1]) or 1000
local r = 5000
local holder = { head = nil, total = 0 }
for i = 0, n - 1 do
  holder.head = { value = i * 3 + 1, next = holder.head }
end
for _ = 1, r do
  local node = holder.head
  local pos = 1
  while node do
    holder.total = (holder.total + node.value * pos) % 1000003
    pos = pos + 1
    node = node.next
  end
end
print(holder.total)
