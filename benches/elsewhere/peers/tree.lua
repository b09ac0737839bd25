-- A complete binary tree of depth d built by a recursive function, then walked r times by
-- another, each walk summing every node's value times its depth; d from argv[1], default 15.
local d = tonumber(arg[1]) or 15
local r = 12

local function build(depth, v)
  local node = { left = nil, right = nil, value = v }
  if depth > 0 then
    node.left = build(depth - 1, v * 2)
    node.right = build(depth - 1, v * 2 + 1)
  end
  return node
end

local function walk(node, depth)
  if node == nil then
    return 0
  end
  return node.value * depth + walk(node.left, depth + 1) + walk(node.right, depth + 1)
end

local tree = build(d, 1)
local sum = 0
for round = 1, r do
  sum = (sum + walk(tree, round)) % 1000000007
end
print(sum)
