"""Array fill and sum over n ints: a[i] = (i * 7) ^ i, then the sum; n from argv[1], default 10^7."""
import sys
from array import array

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
a = array("q", bytes(8 * n))
for i in range(n):
    a[i] = (i * 7) ^ i
total = 0
for i in range(n):
    total += a[i]
print(total)
