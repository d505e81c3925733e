"""A stand-in for a generated driver (same protocol, computed with numpy on the CPU) for sweep tests.

Kernel: out[i] = 2 * x[i] for i < n, one buffer in (x), one out. ``FAKE_MODE`` picks a behaviour: exact, twin
(float64 buffers), tail (the last element left unwritten), flaky (the second run differs), crash (case 3 dies),
aligned (wrong where a buffer starts into its allocation: ``HW_OFFSET`` set, as a port assuming aligned views).
"""

import os
import sys

import numpy as np

mode = os.environ.get("FAKE_MODE", "exact")
width = 8 if mode == "twin" else 4
dtype = np.float64 if mode == "twin" else np.float32
if sys.argv[1] == "sizes":
    for line in sys.stdin:
        if not line.strip():
            continue
        n, _block = (int(v) for v in line.split())
        print(f"ext {n + 1} {n + 1} | geo {max(1, n // 32)} 1 1 32 1 1 0 | sc {n} | bytes {width} {width}", flush=True)
    sys.exit(0)
man = open(sys.argv[3]).read().split("\n")
for num, line in enumerate(x for x in man if x.strip()):
    inp, out, runs, n, _block = line.split()
    if mode == "crash" and num == 3 and "c3." in inp:
        print(f"fail {num} an illegal memory access was encountered", flush=True)
        sys.exit(3)
    x = np.fromfile(f"{inp}.0.bin", dtype=dtype)
    y = np.fromfile(f"{inp}.1.bin", dtype=dtype)
    for r in range(int(runs)):
        z = y.copy()
        m = int(n) - (1 if mode == "tail" else 0)
        z[:m] = 2 * x[:m]
        if mode == "flaky" and r == 1:
            z[0] += 1
        if mode == "aligned" and os.environ.get("HW_OFFSET", "0") != "0":
            z[0] += 1
        z.tofile(f"{out}.r{r}.1.bin")
    print(f"ok {num}", flush=True)
