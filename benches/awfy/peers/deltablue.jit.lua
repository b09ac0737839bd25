-- Are We Fast Yet: DeltaBlue, as benches/awfy/programs/deltablue.masm: the incremental
-- constraint solver of Freeman-Benson, Maloney and Borning with the suite's chain and
-- projection tests for n (argv[1], the inner iterations). Prints the chain's last value
-- (99), the two projection values the suite checks (1170 and 5) and how many destinations
-- followed the scale and offset changes (2 * (n - 1)). The constraint classes are Lua
-- classes (metatables) with the suite's inheritance; the suite's forEach blocks are loops
-- over the Vector's storage, as in the MASM program.
-- LuaJIT port of deltablue.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `math.floor` of a division for `//`; the same algorithm and printed result.

---------------------------------------------------------------- strengths
local Strength = {}
Strength.__index = Strength

-- symbols, from 1 (the MASM program's from 0)
local ABSOLUTE_STRONGEST, REQUIRED, STRONG_PREFERRED, PREFERRED = 1, 2, 3, 4
local STRONG_DEFAULT, DEFAULT, WEAK_DEFAULT, ABSOLUTE_WEAKEST = 5, 6, 7, 8

local strength_constant = {}
for sym, value in ipairs({ -10000, -800, -600, -400, -200, 0, 500, 10000 }) do
  strength_constant[sym] = setmetatable({ arithmetic_value = value }, Strength)
end

function Strength.of(sym)
  return strength_constant[sym]
end

function Strength:stronger(s)
  return self.arithmetic_value < s.arithmetic_value
end

function Strength:weaker(s)
  return self.arithmetic_value > s.arithmetic_value
end

function Strength:weakest(s)
  if s:weaker(self) then
    return s
  end
  return self
end

function Strength:same_as(s)
  return self.arithmetic_value == s.arithmetic_value
end

---------------------------------------------------------------- Vector
-- The suite's growable array, counting from 1 as Lua's arrays: storage indices 1 to
-- capacity, elements first to last - 1.
local Vector = {}
Vector.__index = Vector

function Vector.new(size)
  return setmetatable({ storage = {}, capacity = size or 50, first = 1, last = 1 }, Vector)
end

function Vector.with(elem)
  local v = Vector.new(1)
  v:append(elem)
  return v
end

function Vector:append(elem)
  if self.last > self.capacity then
    -- Arrays.copyOf(storage, 2 * capacity)
    local old = self.storage
    local new = {}
    for i = 1, self.capacity do
      new[i] = old[i]
    end
    self.storage = new
    self.capacity = 2 * self.capacity
  end
  self.storage[self.last] = elem
  self.last = self.last + 1
end

function Vector:is_empty()
  return self.last == self.first
end

function Vector:remove_first()
  if self.last == self.first then
    return nil
  end
  self.first = self.first + 1
  return self.storage[self.first - 1]
end

function Vector:at(idx)
  if idx > self.capacity then
    return nil
  end
  return self.storage[idx]
end

function Vector:remove(obj)
  local new = {}
  local new_last = 1
  local found = false
  for i = self.first, self.last - 1 do
    local it = self.storage[i]
    if it == obj then
      found = true
    else
      new[new_last] = it
      new_last = new_last + 1
    end
  end
  self.storage = new
  self.last = new_last
  self.first = 1
  return found
end

local function strength_first(c1, c2)
  return c1.strength:stronger(c2.strength)
end

-- the suite's quicksort of storage[i..j], strongest constraint first
function Vector:sort_range(i, j)
  local s = self.storage
  local n = j + 1 - i
  if n <= 1 then
    return
  end
  local di, dj = s[i], s[j]
  if not strength_first(di, dj) then
    s[i], s[j] = dj, di
    di, dj = dj, di
  end
  if n > 2 then
    local ij = math.floor((i + j) / 2)
    local dij = s[ij]
    if strength_first(di, dij) then
      if not strength_first(dij, dj) then
        s[j], s[ij] = dij, dj
        dij = dj
      end
    else
      s[i], s[ij] = dij, di
      dij = di
    end
    if n > 3 then
      local k, l = i, j - 1
      while true do
        while k <= l and strength_first(dij, s[l]) do
          l = l - 1
        end
        k = k + 1
        while k <= l and strength_first(s[k], dij) do
          k = k + 1
        end
        if k > l then
          break
        end
        s[k], s[l] = s[l], s[k]
      end
      self:sort_range(i, l)
      self:sort_range(k, j)
    end
  end
end

function Vector:sort_by_strength()
  if self.last - self.first > 0 then
    self:sort_range(self.first, self.last - 1)
  end
end

---------------------------------------------------------------- Variable
local Variable = {}
Variable.__index = Variable

function Variable.new()
  return setmetatable({
    value = 0,
    constraints = Vector.new(2),
    determined_by = nil,
    mark = 0,
    walk_strength = Strength.of(ABSOLUTE_WEAKEST),
    stay = true,
  }, Variable)
end

function Variable.of_value(value)
  local v = Variable.new()
  v.value = value
  return v
end

function Variable:add_constraint(c)
  self.constraints:append(c)
end

function Variable:remove_constraint(c)
  self.constraints:remove(c)
  if self.determined_by == c then
    self.determined_by = nil
  end
end

---------------------------------------------------------------- constraints
local Planner = {}
Planner.__index = Planner

local AbstractConstraint = {}
AbstractConstraint.__index = AbstractConstraint

function AbstractConstraint:init(sym)
  self.strength = Strength.of(sym)
end

function AbstractConstraint:is_input()
  return false
end

function AbstractConstraint:add_constraint(planner)
  self:add_to_graph()
  planner:incremental_add(self)
end

function AbstractConstraint:destroy_constraint(planner)
  if self:is_satisfied() then
    planner:incremental_remove(self)
  end
  self:remove_from_graph()
end

local function input_known(v, mark)
  return v.mark == mark or v.stay or v.determined_by == nil
end

function AbstractConstraint:satisfy(mark, planner)
  local overridden
  self:choose_method(mark)
  if self:is_satisfied() then
    self:mark_inputs(mark)
    local out = self:get_output()
    overridden = out.determined_by
    if overridden ~= nil then
      overridden:mark_unsatisfied()
    end
    out.determined_by = self
    if not planner:add_propagate(self, mark) then
      error("Cycle encountered")
    end
    out.mark = mark
  else
    overridden = nil
    if self.strength:same_as(Strength.of(REQUIRED)) then
      error("Could not satisfy a required constraint")
    end
  end
  return overridden
end

-- UnaryConstraint
local UnaryConstraint = setmetatable({}, AbstractConstraint)
UnaryConstraint.__index = UnaryConstraint

function UnaryConstraint:init(v, sym, planner)
  AbstractConstraint.init(self, sym)
  self.output = v
  self.satisfied = false
  self:add_constraint(planner)
end

function UnaryConstraint:add_to_graph()
  self.output:add_constraint(self)
  self.satisfied = false
end

function UnaryConstraint:remove_from_graph()
  if self.output ~= nil then
    self.output:remove_constraint(self)
  end
  self.satisfied = false
end

function UnaryConstraint:choose_method(mark)
  self.satisfied = self.output.mark ~= mark and self.strength:stronger(self.output.walk_strength)
end

function UnaryConstraint:is_satisfied()
  return self.satisfied
end

function UnaryConstraint:mark_unsatisfied()
  self.satisfied = false
end

function UnaryConstraint:get_output()
  return self.output
end

function UnaryConstraint:mark_inputs(_) end

function UnaryConstraint:inputs_known(_)
  return true
end

function UnaryConstraint:recalculate()
  self.output.walk_strength = self.strength
  self.output.stay = not self:is_input()
  if self.output.stay then
    self:execute()
  end
end

local EditConstraint = setmetatable({}, UnaryConstraint)
EditConstraint.__index = EditConstraint

function EditConstraint.new(v, sym, planner)
  local c = setmetatable({}, EditConstraint)
  c:init(v, sym, planner)
  return c
end

function EditConstraint:is_input()
  return true
end

function EditConstraint:execute() end

local StayConstraint = setmetatable({}, UnaryConstraint)
StayConstraint.__index = StayConstraint

function StayConstraint.new(v, sym, planner)
  local c = setmetatable({}, StayConstraint)
  c:init(v, sym, planner)
  return c
end

function StayConstraint:execute() end

-- BinaryConstraint; direction 0 none, 1 forward, 2 backward
local NONE, FORWARD, BACKWARD = 0, 1, 2

local BinaryConstraint = setmetatable({}, AbstractConstraint)
BinaryConstraint.__index = BinaryConstraint

function BinaryConstraint:init(var1, var2, sym)
  AbstractConstraint.init(self, sym)
  self.v1 = var1
  self.v2 = var2
  self.direction = NONE
end

function BinaryConstraint:is_satisfied()
  return self.direction ~= NONE
end

function BinaryConstraint:add_to_graph()
  self.v1:add_constraint(self)
  self.v2:add_constraint(self)
  self.direction = NONE
end

function BinaryConstraint:remove_from_graph()
  if self.v1 ~= nil then
    self.v1:remove_constraint(self)
  end
  if self.v2 ~= nil then
    self.v2:remove_constraint(self)
  end
  self.direction = NONE
end

function BinaryConstraint:choose_method(mark)
  local v1, v2 = self.v1, self.v2
  if v1.mark == mark then
    if v2.mark ~= mark and self.strength:stronger(v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = NONE
    end
    return
  end
  if v2.mark == mark then
    if v1.mark ~= mark and self.strength:stronger(v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = NONE
    end
    return
  end
  -- neither variable is marked
  if v1.walk_strength:weaker(v2.walk_strength) then
    if self.strength:stronger(v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = NONE
    end
  else
    if self.strength:stronger(v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = NONE
    end
  end
end

function BinaryConstraint:mark_inputs(mark)
  if self.direction == FORWARD then
    self.v1.mark = mark
  else
    self.v2.mark = mark
  end
end

function BinaryConstraint:inputs_known(mark)
  if self.direction == FORWARD then
    return input_known(self.v1, mark)
  end
  return input_known(self.v2, mark)
end

function BinaryConstraint:mark_unsatisfied()
  self.direction = NONE
end

function BinaryConstraint:get_output()
  if self.direction == FORWARD then
    return self.v2
  end
  return self.v1
end

function BinaryConstraint:recalculate()
  local ihn, out
  if self.direction == FORWARD then
    ihn, out = self.v1, self.v2
  else
    ihn, out = self.v2, self.v1
  end
  out.walk_strength = self.strength:weakest(ihn.walk_strength)
  out.stay = ihn.stay
  if out.stay then
    self:execute()
  end
end

local EqualityConstraint = setmetatable({}, BinaryConstraint)
EqualityConstraint.__index = EqualityConstraint

function EqualityConstraint.new(var1, var2, sym, planner)
  local c = setmetatable({}, EqualityConstraint)
  c:init(var1, var2, sym)
  c:add_constraint(planner)
  return c
end

function EqualityConstraint:execute()
  if self.direction == FORWARD then
    self.v2.value = self.v1.value
  else
    self.v1.value = self.v2.value
  end
end

local ScaleConstraint = setmetatable({}, BinaryConstraint)
ScaleConstraint.__index = ScaleConstraint

function ScaleConstraint.new(src, scale, offset, dest, sym, planner)
  local c = setmetatable({}, ScaleConstraint)
  c:init(src, dest, sym)
  c.scale = scale
  c.offset = offset
  c:add_constraint(planner)
  return c
end

function ScaleConstraint:add_to_graph()
  self.v1:add_constraint(self)
  self.v2:add_constraint(self)
  self.scale:add_constraint(self)
  self.offset:add_constraint(self)
  self.direction = NONE
end

function ScaleConstraint:remove_from_graph()
  if self.v1 ~= nil then
    self.v1:remove_constraint(self)
  end
  if self.v2 ~= nil then
    self.v2:remove_constraint(self)
  end
  if self.scale ~= nil then
    self.scale:remove_constraint(self)
  end
  if self.offset ~= nil then
    self.offset:remove_constraint(self)
  end
  self.direction = NONE
end

function ScaleConstraint:mark_inputs(mark)
  if self.direction == FORWARD then
    self.v1.mark = mark
  else
    self.v2.mark = mark
  end
  self.scale.mark = mark
  self.offset.mark = mark
end

function ScaleConstraint:inputs_known(mark)
  local input = self.direction == FORWARD and self.v1 or self.v2
  return input_known(input, mark) and input_known(self.scale, mark)
    and input_known(self.offset, mark)
end

-- an integer division truncating toward zero, as the suite's int division
local function quot(a, b)
  local q = math.floor(a / b)
  if q < 0 and q * b ~= a then
    q = q + 1
  end
  return q
end

function ScaleConstraint:execute()
  if self.direction == FORWARD then
    self.v2.value = self.v1.value * self.scale.value + self.offset.value
  else
    self.v1.value = quot(self.v2.value - self.offset.value, self.scale.value)
  end
end

function ScaleConstraint:recalculate()
  local ihn, out
  if self.direction == FORWARD then
    ihn, out = self.v1, self.v2
  else
    ihn, out = self.v2, self.v1
  end
  out.walk_strength = self.strength:weakest(ihn.walk_strength)
  out.stay = ihn.stay and self.scale.stay and self.offset.stay
  if out.stay then
    self:execute()
  end
end

---------------------------------------------------------------- Planner
function Planner.new()
  return setmetatable({ current_mark = 1 }, Planner)
end

function Planner:new_mark()
  self.current_mark = self.current_mark + 1
  return self.current_mark
end

function Planner:incremental_add(c)
  local mark = self:new_mark()
  local overridden = c:satisfy(mark, self)
  while overridden ~= nil do
    overridden = overridden:satisfy(mark, self)
  end
end

function Planner:incremental_remove(c)
  local out = c:get_output()
  c:mark_unsatisfied()
  c:remove_from_graph()
  local unsatisfied = self:remove_propagate_from(out)
  for i = unsatisfied.first, unsatisfied.last - 1 do
    self:incremental_add(unsatisfied.storage[i])
  end
end

-- every satisfied constraint on v but the one that determines it, appended to coll
local function add_constraints_consuming_to(v, coll)
  local determining = v.determined_by
  local cs = v.constraints
  for i = cs.first, cs.last - 1 do
    local c = cs.storage[i]
    if c ~= determining and c:is_satisfied() then
      coll:append(c)
    end
  end
end

function Planner:add_propagate(c, mark)
  local todo = Vector.with(c)
  while not todo:is_empty() do
    local d = todo:remove_first()
    if d:get_output().mark == mark then
      self:incremental_remove(c)
      return false
    end
    d:recalculate()
    add_constraints_consuming_to(d:get_output(), todo)
  end
  return true
end

function Planner:remove_propagate_from(out)
  local unsatisfied = Vector.new()
  out.determined_by = nil
  out.walk_strength = Strength.of(ABSOLUTE_WEAKEST)
  out.stay = true
  local todo = Vector.with(out)
  while not todo:is_empty() do
    local v = todo:remove_first()
    local cs = v.constraints
    for i = cs.first, cs.last - 1 do
      local c = cs.storage[i]
      if not c:is_satisfied() then
        unsatisfied:append(c)
      end
    end
    local determining = v.determined_by
    for i = cs.first, cs.last - 1 do
      local c = cs.storage[i]
      if c ~= determining and c:is_satisfied() then
        c:recalculate()
        todo:append(c:get_output())
      end
    end
  end
  unsatisfied:sort_by_strength()
  return unsatisfied
end

function Planner:extract_plan_from_constraints(constraints)
  local sources = Vector.new()
  for i = constraints.first, constraints.last - 1 do
    local c = constraints.storage[i]
    if c:is_input() and c:is_satisfied() then
      sources:append(c)
    end
  end
  return self:make_plan(sources)
end

function Planner:make_plan(sources)
  local mark = self:new_mark()
  local plan = Vector.new(15)
  local todo = sources
  while not todo:is_empty() do
    local c = todo:remove_first()
    if c:get_output().mark ~= mark and c:inputs_known(mark) then
      plan:append(c)
      c:get_output().mark = mark
      add_constraints_consuming_to(c:get_output(), todo)
    end
  end
  return plan
end

local function execute_plan(plan)
  for i = plan.first, plan.last - 1 do
    plan.storage[i]:execute()
  end
end

function Planner:change(var, new_value)
  local edit = EditConstraint.new(var, PREFERRED, self)
  local plan = self:extract_plan_from_constraints(Vector.with(edit))
  for _ = 1, 10 do
    var.value = new_value
    execute_plan(plan)
  end
  edit:destroy_constraint(self)
end

---------------------------------------------------------------- the tests
-- vars[1] to vars[n + 1] are the suite's vars[0] to vars[n]
local function chain_test(n)
  local planner = Planner.new()
  local vars = {}
  for i = 1, n + 1 do
    vars[i] = Variable.new()
  end
  for i = 1, n do
    EqualityConstraint.new(vars[i], vars[i + 1], REQUIRED, planner)
  end
  StayConstraint.new(vars[n + 1], STRONG_DEFAULT, planner)
  local edit = EditConstraint.new(vars[1], PREFERRED, planner)
  local plan = planner:extract_plan_from_constraints(Vector.with(edit))
  for i = 0, 99 do
    vars[1].value = i
    execute_plan(plan)
    if vars[n + 1].value ~= i then
      error("Chain test failed!")
    end
  end
  edit:destroy_constraint(planner)
  print(vars[n + 1].value)
end

local function projection_test(n)
  local planner = Planner.new()
  local dests = Vector.new()
  local scale = Variable.of_value(10)
  local offset = Variable.of_value(1000)
  local src, dst = nil, nil
  for i = 1, n do
    src = Variable.of_value(i)
    dst = Variable.of_value(i)
    dests:append(dst)
    StayConstraint.new(src, DEFAULT, planner)
    ScaleConstraint.new(src, scale, offset, dst, REQUIRED, planner)
  end
  planner:change(src, 17)
  if dst.value ~= 1170 then
    error("Projection test 1 failed!")
  end
  print(dst.value)
  planner:change(dst, 1050)
  if src.value ~= 5 then
    error("Projection test 2 failed!")
  end
  print(src.value)
  local checked = 0
  planner:change(scale, 5)
  for i = 1, n - 1 do
    if dests:at(i).value ~= i * 5 + 1000 then
      error("Projection test 3 failed!")
    end
    checked = checked + 1
  end
  planner:change(offset, 2000)
  for i = 1, n - 1 do
    if dests:at(i).value ~= i * 5 + 2000 then
      error("Projection test 4 failed!")
    end
    checked = checked + 1
  end
  print(checked)
end

local n = tonumber(arg[1]) or 50000
chain_test(n)
projection_test(n)
