"""Nested loops over a 2-D index into an n x n grid stored row by row in one list.

a[i * n + j] = i ^ j, then the sum of every cell; n from argv[1], default 3000.
"""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
a = [0] * (n * n)
for i in range(n):
    for j in range(n):
        a[i * n + j] = i ^ j
s = 0
for i in range(n):
    row = i * n
    for j in range(n):
        s += a[row + j]
print(s)
