"""An integer loop of n iterations: s = (s * 31 + i) % 1000000007; n from argv[1], default 10^8."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000000
s = 0
for i in range(n):
    s = (s * 31 + i) % 1000000007
print(s)
