"""Method calls in a loop: an instance method with two arguments, acc.add(i, 7).

It does total = total + (a ^ b), n times; n from argv[1], default 10^7.
"""
import sys


class Acc:
    def __init__(self):
        self.total = 0

    def add(self, a, b):
        self.total += a ^ b


n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
acc = Acc()
for i in range(n):
    acc.add(i, 7)
print(acc.total)
