"""Tail benchmark: attach to and follow a 1,000,000-line trainer_log.jsonl.

Compares, in the same run, hipwizard's incremental tail with LlamaBoard's way (re-read and parse the
whole file on every refresh). Prints attach time, per-update cost at 10k and 1M lines, and ratios.
Usage: python benchmarks/tail.py [LINES]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from hipwizard.train.run.history import RunHistory
from hipwizard.train.run.tail import TrainerLogTail

RECORD = {"current_steps": 0, "total_steps": 0, "loss": 1.2345678, "lr": 4.9e-05, "epoch": 0.01,
          "percentage": 0.0, "elapsed_time": "1:23:45", "remaining_time": "2:34:56", "throughput": 5727.67,
          "total_tokens": 159616, "vram_allocated": 20.68, "vram_reserved": 26.7}


def write_log(path: Path, n: int, start: int = 1) -> None:
    with open(path, "a") as fh:
        for i in range(start, start + n):
            RECORD["current_steps"] = i
            fh.write(json.dumps(RECORD) + "\n")


def llamaboard_update(path: Path) -> int:
    """What LlamaBoard's get_trainer_info does every refresh: read every line, parse each."""
    history = RunHistory()
    with open(path, encoding="utf-8") as fh:
        history.add(json.loads(line) for line in fh if line.strip())
    return len(history.loss)


def measure(total: int, updates: int = 20, per_update: int = 10) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trainer_log.jsonl"
        write_log(path, total)
        size_mb = path.stat().st_size / 1e6
        t = time.perf_counter()
        tail = TrainerLogTail(path)
        history = RunHistory()
        batch = tail.attach()
        history.add(batch.records, batch.invalid)
        attach_s = time.perf_counter() - t
        step = total + 1
        inc = []
        for _ in range(updates):
            write_log(path, per_update, step)
            step += per_update
            t = time.perf_counter()
            b = tail.poll()
            history.add(b.records, b.invalid)
            inc.append(time.perf_counter() - t)
            assert len(b.records) == per_update
        t = time.perf_counter()
        full_n = llamaboard_update(path)
        full_s = time.perf_counter() - t
        assert full_n == step - 1
    inc.sort()
    return {"lines": total, "size_mb": size_mb, "attach_s": attach_s, "update_ms": inc[len(inc) // 2] * 1e3,
            "reread_ms": full_s * 1e3, "sampled": batch.sampled}


def main() -> int:
    big = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rows = [measure(10_000), measure(big, updates=20)]
    print(f"{'lines':>10} {'MB':>7} {'attach s':>9} {'update ms':>10} {'re-read ms':>11} {'ratio':>8}")
    for r in rows:
        print(f"{r['lines']:>10,} {r['size_mb']:>7.1f} {r['attach_s']:>9.3f} {r['update_ms']:>10.3f} "
              f"{r['reread_ms']:>11.1f} {r['reread_ms'] / r['update_ms']:>7.0f}x")
    small, large = rows
    print(f"per-update cost, {large['lines']:,} vs {small['lines']:,} lines: {large['update_ms'] / small['update_ms']:.2f}x "
          f"(re-read: {large['reread_ms'] / small['reread_ms']:.0f}x)")
    print(f"attach {large['attach_s']:.3f} s (target < 1 s); older history sampled: {large['sampled']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
