-- Are We Fast Yet: Bounce, as benches/awfy/programs/bounce.masm: 100 balls bounce in a
-- 500 x 500 box for 50 steps; a run returns the number of bounces (1331). Runs the
-- benchmark n times (argv[1]), checks every result and prints the last one.
-- LuaJIT port of bounce.lua (for `luajit -joff`): Lua 5.4's integer operators as
-- `% 65536` for `& 65535`; the same algorithm and printed result.
local Random = {}
Random.__index = Random

function Random.new()
  return setmetatable({ seed = 74755 }, Random)
end

function Random:next()
  self.seed = ((self.seed * 1309) + 13849) % 65536
  return self.seed
end

local abs = math.abs

local Ball = {}
Ball.__index = Ball

function Ball.new(random)
  local ball = setmetatable({}, Ball)
  ball.x = random:next() % 500
  ball.y = random:next() % 500
  ball.x_vel = (random:next() % 300) - 150
  ball.y_vel = (random:next() % 300) - 150
  return ball
end

function Ball:bounce()
  local x_limit, y_limit = 500, 500
  local bounced = false
  self.x = self.x + self.x_vel
  self.y = self.y + self.y_vel
  if self.x > x_limit then
    self.x = x_limit
    self.x_vel = 0 - abs(self.x_vel)
    bounced = true
  end
  if self.x < 0 then
    self.x = 0
    self.x_vel = abs(self.x_vel)
    bounced = true
  end
  if self.y > y_limit then
    self.y = y_limit
    self.y_vel = 0 - abs(self.y_vel)
    bounced = true
  end
  if self.y < 0 then
    self.y = 0
    self.y_vel = abs(self.y_vel)
    bounced = true
  end
  return bounced
end

local function benchmark()
  local random = Random.new()
  local ball_count = 100
  local bounces = 0
  local balls = {}
  for i = 1, ball_count do
    balls[i] = Ball.new(random)
  end
  for _ = 1, 50 do
    for i = 1, #balls do
      if balls[i]:bounce() then
        bounces = bounces + 1
      end
    end
  end
  return bounces
end

local n = tonumber(arg[1]) or 2000
local result = 0
for _ = 1, n do
  result = benchmark()
  if result ~= 1331 then error("Bounce: the result is not 1331 but " .. result) end
end
print(result)
