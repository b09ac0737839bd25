-- Are We Fast Yet: Richards, as benches/awfy/programs/richards.masm: Martin Richards'
-- operating-system simulation (an idle task, a worker, two handlers and two devices
-- exchanging packets under a priority scheduler); a run checks that 23246 packets were
-- queued and the tasks held themselves 9297 times. Runs the benchmark n times (argv[1]),
-- checks every run and prints the last run's two counts. Each task's function is a
-- closure over the scheduler, as in the suite.
-- Task identities count from 1 (the suite's from 0), as the task table is a Lua array.
-- LuaJIT port of richards.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `% 2`, `math.floor` of a division and `bit.bxor` (the values fit in 32 bits); the same
-- algorithm and printed result.
local IDLER, WORKER, HANDLER_A, HANDLER_B, DEVICE_A, DEVICE_B = 1, 2, 3, 4, 5, 6
local DEVICE_PACKET_KIND, WORK_PACKET_KIND = 0, 1
local DATA_SIZE = 4

-- append(packet, queue_head): the queue with packet at its end
local function append(packet, queue_head)
  packet.link = nil
  if queue_head == nil then
    return packet
  end
  local mouse = queue_head
  local link = mouse.link
  while link ~= nil do
    mouse = link
    link = mouse.link
  end
  mouse.link = packet
  return queue_head
end

local function new_packet(link, identity, kind)
  local data = {}
  for i = 1, DATA_SIZE do
    data[i] = 0
  end
  return { link = link, identity = identity, kind = kind, datum = 0, data = data }
end

local TaskControlBlock = {}
TaskControlBlock.__index = TaskControlBlock

function TaskControlBlock.new(link, identity, priority, input, pending, waiting, holding, fn, handle)
  return setmetatable({
    packet_pending = pending,
    task_waiting = waiting,
    task_holding = holding,
    link = link,
    identity = identity,
    priority = priority,
    input = input,
    fn = fn,
    handle = handle,
  }, TaskControlBlock)
end

function TaskControlBlock:is_task_holding_or_waiting()
  return self.task_holding or (not self.packet_pending and self.task_waiting)
end

function TaskControlBlock:is_waiting_with_packet()
  return self.packet_pending and self.task_waiting and not self.task_holding
end

function TaskControlBlock:add_input_and_check_priority(packet, old_task)
  if self.input == nil then
    self.input = packet
    self.packet_pending = true
    if self.priority > old_task.priority then
      return self
    end
  else
    self.input = append(packet, self.input)
  end
  return old_task
end

function TaskControlBlock:run_task()
  local message
  if self:is_waiting_with_packet() then
    message = self.input
    self.input = message.link
    if self.input == nil then
      -- running
      self.packet_pending = false
      self.task_waiting = false
      self.task_holding = false
    else
      -- packet pending
      self.packet_pending = true
      self.task_waiting = false
      self.task_holding = false
    end
  else
    message = nil
  end
  return self.fn(message, self.handle)
end

local Scheduler = {}
Scheduler.__index = Scheduler

function Scheduler.new()
  return setmetatable({
    task_list = nil,
    current_task = nil,
    current_task_identity = 0,
    task_table = {},
    queue_packet_count = 0,
    hold_count = 0,
  }, Scheduler)
end

function Scheduler:create_task(identity, priority, work, pending, waiting, holding, fn, data)
  local t = TaskControlBlock.new(self.task_list, identity, priority, work, pending, waiting, holding, fn, data)
  self.task_list = t
  self.task_table[identity] = t
end

function Scheduler:find_task(identity)
  local t = self.task_table[identity]
  if t == nil then
    error("findTask failed")
  end
  return t
end

function Scheduler:hold_self()
  self.hold_count = self.hold_count + 1
  self.current_task.task_holding = true
  return self.current_task.link
end

function Scheduler:queue_packet(packet)
  local t = self:find_task(packet.identity)
  if t == nil then
    return nil
  end
  self.queue_packet_count = self.queue_packet_count + 1
  packet.link = nil
  packet.identity = self.current_task_identity
  return t:add_input_and_check_priority(packet, self.current_task)
end

function Scheduler:release(identity)
  local t = self:find_task(identity)
  if t == nil then
    return nil
  end
  t.task_holding = false
  if t.priority > self.current_task.priority then
    return t
  end
  return self.current_task
end

function Scheduler:mark_waiting()
  self.current_task.task_waiting = true
  return self.current_task
end

function Scheduler:create_device(identity, priority, work, pending, waiting, holding)
  local data = { pending = nil }
  self:create_task(identity, priority, work, pending, waiting, holding, function(packet, record)
    local function_work = packet
    if function_work == nil then
      function_work = record.pending
      if function_work == nil then
        return self:mark_waiting()
      end
      record.pending = nil
      return self:queue_packet(function_work)
    end
    record.pending = function_work
    return self:hold_self()
  end, data)
end

function Scheduler:create_handler(identity, priority, work, pending, waiting, holding)
  local data = { work_in = nil, device_in = nil }
  self:create_task(identity, priority, work, pending, waiting, holding, function(packet, record)
    if packet ~= nil then
      if packet.kind == WORK_PACKET_KIND then
        record.work_in = append(packet, record.work_in)
      else
        record.device_in = append(packet, record.device_in)
      end
    end
    local work_packet = record.work_in
    if work_packet == nil then
      return self:mark_waiting()
    end
    local count = work_packet.datum
    if count >= DATA_SIZE then
      record.work_in = work_packet.link
      return self:queue_packet(work_packet)
    end
    local device_packet = record.device_in
    if device_packet == nil then
      return self:mark_waiting()
    end
    record.device_in = device_packet.link
    device_packet.datum = work_packet.data[count + 1]
    work_packet.datum = count + 1
    return self:queue_packet(device_packet)
  end, data)
end

function Scheduler:create_idler(identity, priority, work, pending, waiting, holding)
  local data = { control = 1, count = 10000 }
  self:create_task(identity, priority, work, pending, waiting, holding, function(_, record)
    record.count = record.count - 1
    if record.count == 0 then
      return self:hold_self()
    end
    if record.control % 2 == 0 then
      record.control = math.floor(record.control / 2)
      return self:release(DEVICE_A)
    end
    record.control = bit.bxor(math.floor(record.control / 2), 53256)
    return self:release(DEVICE_B)
  end, data)
end

function Scheduler:create_worker(identity, priority, work, pending, waiting, holding)
  local data = { destination = HANDLER_A, count = 0 }
  self:create_task(identity, priority, work, pending, waiting, holding, function(packet, record)
    if packet == nil then
      return self:mark_waiting()
    end
    if record.destination == HANDLER_A then
      record.destination = HANDLER_B
    else
      record.destination = HANDLER_A
    end
    packet.identity = record.destination
    packet.datum = 0
    for i = 1, DATA_SIZE do
      record.count = record.count + 1
      if record.count > 26 then
        record.count = 1
      end
      packet.data[i] = 65 + record.count - 1
    end
    return self:queue_packet(packet)
  end, data)
end

function Scheduler:schedule()
  self.current_task = self.task_list
  while self.current_task ~= nil do
    if self.current_task:is_task_holding_or_waiting() then
      self.current_task = self.current_task.link
    else
      self.current_task_identity = self.current_task.identity
      self.current_task = self.current_task:run_task()
    end
  end
end

-- start(): whether 23246 packets were queued and the tasks held themselves 9297 times
function Scheduler:start()
  self:create_idler(IDLER, 0, nil, false, false, false)
  local work_q = new_packet(nil, WORKER, WORK_PACKET_KIND)
  work_q = new_packet(work_q, WORKER, WORK_PACKET_KIND)
  self:create_worker(WORKER, 1000, work_q, true, true, false)

  work_q = new_packet(nil, DEVICE_A, DEVICE_PACKET_KIND)
  work_q = new_packet(work_q, DEVICE_A, DEVICE_PACKET_KIND)
  work_q = new_packet(work_q, DEVICE_A, DEVICE_PACKET_KIND)
  self:create_handler(HANDLER_A, 2000, work_q, true, true, false)

  work_q = new_packet(nil, DEVICE_B, DEVICE_PACKET_KIND)
  work_q = new_packet(work_q, DEVICE_B, DEVICE_PACKET_KIND)
  work_q = new_packet(work_q, DEVICE_B, DEVICE_PACKET_KIND)
  self:create_handler(HANDLER_B, 3000, work_q, true, true, false)

  self:create_device(DEVICE_A, 4000, nil, false, true, false)
  self:create_device(DEVICE_B, 5000, nil, false, true, false)

  self:schedule()
  return self.queue_packet_count == 23246 and self.hold_count == 9297
end

local n = tonumber(arg[1]) or 80
local last = nil
for _ = 1, n do
  last = Scheduler.new()
  if not last:start() then
    error("Richards: the packet or hold count is wrong")
  end
end
if last ~= nil then
  print(last.queue_packet_count)
  print(last.hold_count)
end
