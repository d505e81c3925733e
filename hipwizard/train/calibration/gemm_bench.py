"""Time a bf16 GEMM on this machine's first GPU (or the CPU): the achievable matmul rate.

Run as a subprocess (it imports torch; the app never does): ``python -m hipwizard.train.calibration.gemm_bench
[--sizes 8192,16384] [--seconds 1.0]`` prints one JSON object: ``{"tflops", "n", "device", "gpu", "torch",
"rates": {n: tflops}}``. Each size is warmed up, then timed for about ``--seconds`` between device
synchronisations; the best size's rate is the ceiling. On the CPU (no GPU) it uses smaller sizes by default.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def bench(sizes: list[int] | None = None, seconds: float = 1.0) -> dict:
    import torch  # heavy: this module runs in its own subprocess

    cuda = torch.cuda.is_available()  # ROCm builds answer here too
    device = "cuda" if cuda else "cpu"
    sizes = sizes or ([8192, 16384] if cuda else [256, 512])
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rates: dict[int, float] = {}
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        sync()
        iters, start = 0, time.perf_counter()
        while True:
            for _ in range(5):
                a @ b
            iters += 5
            sync()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates[n] = 2.0 * n**3 * iters / elapsed / 1e12
        del a, b
    best = max(rates, key=lambda n: rates[n])
    return {"tflops": rates[best], "n": best, "device": device,
            "gpu": torch.cuda.get_device_name(0) if cuda else "CPU", "torch": torch.__version__,
            "rates": {str(k): round(v, 2) for k, v in rates.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="", help="comma-separated square sizes")
    p.add_argument("--seconds", type=float, default=1.0)
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] or None
    print(json.dumps(bench(sizes, args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
