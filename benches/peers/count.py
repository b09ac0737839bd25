"""The plainest loop: s = s + i for i below n; n from argv[1], default 10^8."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000000
s = 0
for i in range(n):
    s += i
print(s)
