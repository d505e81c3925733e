"""Parity capture+compare cost against bare forward passes of the same model, measured in the same run.

    python benchmarks/parity.py [--size tiny|small|medium] [--device cpu|cuda|auto] [--dtype bf16|fp32] [--repeat N]

Builds a Llama-shaped model with seeded random weights in a temporary folder (no download), loads it
once, then times, on the same inputs:
  forward     bare forward passes (no hooks), median of --repeat
  hooked      the capture pass (hooks clone each module output, then one copy to the host), median
  write       serialising + atomic write of the capture file, against a plain write+fsync of as many bytes
  compare     reading two capture files back and computing every module's metrics (numpy)
and prints the ratios. Target (issue 5): hooked <= 2x forward, write at disk speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    # hidden, intermediate, layers, heads, kv heads, vocab
    "tiny": (64, 172, 2, 4, 2, 512),
    "small": (512, 1376, 8, 8, 4, 32000),
    "medium": (2048, 5504, 16, 16, 8, 32000),
}


def build_model(folder: Path, size: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    h, i, n, a, kv, vocab = SIZES[size]
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=h, intermediate_size=i, num_hidden_layers=n, num_attention_heads=a,
                         num_key_value_heads=kv, vocab_size=vocab, max_position_embeddings=2048)
    LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    import torch

    from hipwizard.parity.capture import (environment, load_model, make_inputs, pick_device, run_hooked,
                                          select_modules, write_capture)
    from hipwizard.parity.compare import compare_files

    device = pick_device(args.device)
    with tempfile.TemporaryDirectory(prefix="hipwizard-bench-") as tmp:
        tmp = Path(tmp)
        build_model(tmp / "model", args.size)
        model = load_model(tmp / "model", args.dtype, device)
        names = select_modules(model, None)
        inputs = make_inputs(model.config.vocab_size, 0, args.batch, args.seq)
        on_device = {k: v.to(device) for k, v in inputs.items()}

        def bare() -> float:
            t0 = time.perf_counter()
            with torch.inference_mode():
                model(**on_device, use_cache=False)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return time.perf_counter() - t0

        bare(), run_hooked(model, names, inputs, device)  # warm-up: kernels, allocator, caches
        fwd, hooked = [], []
        for _ in range(args.repeat):  # interleaved so drift (clocks, other load) hits both alike
            fwd.append(bare())
            captured, order, seconds = run_hooked(model, names, inputs, device)
            hooked.append(seconds)
        tensors = {f"input/{k}": v for k, v in inputs.items()}
        tensors.update({f"output/{n}": captured[n] for n in order})
        meta = {"format": "hipwizard-parity/1", "kind": "model", **environment(device), "dtype": args.dtype,
                "modules": [{"name": n, "order": i, "shape": list(captured[n].shape)} for i, n in enumerate(order)]}
        t0 = time.perf_counter()
        a = write_capture(tmp / "a.safetensors", tensors, meta)
        write_s = time.perf_counter() - t0
        write_capture(tmp / "b.safetensors", tensors, meta)
        blob = os.urandom(a.bytes)
        t0 = time.perf_counter()
        with open(tmp / "plain.bin", "wb") as fh:  # the disk's speed for the same number of bytes
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        disk_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        comp = compare_files(tmp / "a.safetensors", tmp / "b.safetensors")
        compare_s = time.perf_counter() - t0

    f, h = statistics.median(fwd), statistics.median(hooked)
    result = {
        "size": args.size, "device": meta["device_name"], "dtype": args.dtype, "batch": args.batch, "seq": args.seq,
        "modules": len(order), "capture_bytes": a.bytes, "forward_s": round(f, 5), "hooked_forward_s": round(h, 5),
        "hooked_over_forward": round(h / f, 3), "write_s": round(write_s, 5), "plain_write_s": round(disk_s, 5),
        "write_over_disk": round(write_s / disk_s, 3), "compare_s": round(compare_s, 5),
        "capture_plus_compare_over_forward": round((h + write_s + compare_s) / f, 3),
        "verdict": comp.verdict, "torch": torch.__version__,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"parity benchmark — {args.size} Llama ({len(order)} hooked modules), {args.dtype} on {result['device']}, "
              f"batch {args.batch} × seq {args.seq}, capture file {a.bytes / 1e6:.2f} MB")
        print(f"  bare forward        {f * 1e3:9.2f} ms (median of {args.repeat})")
        print(f"  hooked forward      {h * 1e3:9.2f} ms   ratio {h / f:.2f}x   (target ≤ 2x)")
        print(f"  write capture       {write_s * 1e3:9.2f} ms   plain write+fsync {disk_s * 1e3:.2f} ms   ratio {write_s / disk_s:.2f}x")
        print(f"  compare (numpy)     {compare_s * 1e3:9.2f} ms")
        print(f"  capture+write+compare / forward = {result['capture_plus_compare_over_forward']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
