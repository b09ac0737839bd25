"""Object field reads and writes, n iterations: o.x = o.x + i; o.y = o.y ^ o.x.

Prints o.x and o.y; n from argv[1], default 10^7.
"""
import sys


class Obj:
    __slots__ = ("x", "y")

    def __init__(self):
        self.x = 0
        self.y = 0


n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
o = Obj()
for i in range(n):
    o.x = o.x + i
    o.y = o.y ^ o.x
print(o.x)
print(o.y)
