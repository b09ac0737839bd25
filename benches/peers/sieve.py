"""Sieve of Eratosthenes up to n: prints the number of primes <= n; n from argv[1], default 10^7."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000000
composite = bytearray(n + 1)
i = 2
while i * i <= n:
    if not composite[i]:
        j = i * i
        while j <= n:
            composite[j] = 1
            j += i
    i += 1
count = 0
k = 2
while k <= n:
    if not composite[k]:
        count += 1
    k += 1
print(count)
