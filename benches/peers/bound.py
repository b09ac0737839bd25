"""A while loop whose bound is held in an object's field: while i < box.limit, s += i.

n from argv[1], default 3 * 10^7.
"""
import sys


class Box:
    def __init__(self, limit):
        self.limit = limit


n = int(sys.argv[1]) if len(sys.argv) > 1 else 30000000
box = Box(n)
i = 0
s = 0
while i < box.limit:
    s += i
    i += 1
print(s)
