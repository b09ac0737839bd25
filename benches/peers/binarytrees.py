"""binary-trees (the Computer Language Benchmarks Game program); depth from argv[1], default 16.

Prints the stretch tree's check, the number of trees and total check for each depth, then
the long-lived tree's check, one number a line.
"""
import sys


def make(d):
    if d == 0:
        return (None, None)
    return (make(d - 1), make(d - 1))


def check(t):
    if t[0] is None:
        return 1
    return 1 + check(t[0]) + check(t[1])


max_depth = max(int(sys.argv[1]) if len(sys.argv) > 1 else 16, 6)
print(check(make(max_depth + 1)))
long_lived = make(max_depth)
for depth in range(4, max_depth + 1, 2):
    iterations = 1 << (max_depth - depth + 4)
    total = 0
    for _ in range(iterations):
        total += check(make(depth))
    print(iterations)
    print(total)
print(check(long_lived))
