"""String-free integer hashing: each i below n goes through a 32-bit integer mixer.

The hashes are summed; n from argv[1], default 10^7.
"""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
s = 0
for i in range(n):
    x = ((i >> 16) ^ i) * 0x45D9F3B & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = (x >> 16) ^ x
    s += x
print(s)
