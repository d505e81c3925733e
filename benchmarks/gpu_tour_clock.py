"""Steady-state training throughput: stamp each step's arrival in trainer_log.jsonl.

LLaMA-Factory's ``throughput`` is a cumulative average since the start (model load and the first slow
steps included) and ``elapsed_time`` has one-second resolution, so neither gives a steady-state rate of a
short run. A watcher polling the log every 20 ms gives each step's arrival to within ~20 ms.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path


class Poller:
    """Calls ``poll()`` every ``interval`` seconds on a daemon thread while used as a context manager."""

    interval = 0.2

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def poll(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class StepClock(Poller):
    """Stamps the wall-clock arrival of each step's line in trainer_log.jsonl (20 ms polling)."""

    interval = 0.02

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log, self.arrivals, self.rows = log, {}, []
        self._pos, self._buf = 0, b""

    def poll(self) -> None:
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self._pos)
                chunk = fh.read()
        except FileNotFoundError:
            return
        now = time.monotonic()
        if not chunk:
            return
        self._pos += len(chunk)
        *lines, self._buf = (self._buf + chunk).split(b"\n")
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            self.rows.append(row)
            if "loss" in row and "current_steps" in row:
                self.arrivals.setdefault(row["current_steps"], now)


def steady_rate_of(arrivals: dict[int, float], tokens_per_step: float, warmup: int, *, rows=(),
                   run_dir: Path | None = None, sample_tokens: float | None = None, token_count: str | None = "all"):
    """hipwizard's ``steady_rate`` over the steps from ``warmup`` on: real tokens per step (the short last step of
    an epoch counted by its samples, read from the trainer's banner in the run's *.log), padding apart from the
    trainer's ``total_tokens`` in ``rows``; ``tokens_per_step`` (a full step) gives the naive rate beside it."""
    from hipwizard.train.run.throughput import banner_of, steady_rate

    steps = sorted(s for s in arrivals if s >= warmup)
    if len(steps) < 2:
        return None
    shape = next(filter(None, (banner_of(p) for p in sorted(run_dir.glob("*.log")))), None) if run_dir else None
    tokens = {r["current_steps"]: r["total_tokens"] for r in rows if "loss" in r and "total_tokens" in r}
    return steady_rate(arrivals, steps[0], steps[-1], total_tokens=tokens or None, token_count=token_count,
                       shape=shape, sample_tokens=sample_tokens, full_step_tokens=tokens_per_step)


def steady_tokens_per_s(arrivals: dict[int, float], tokens_per_step: float, warmup: int, **kw) -> float | None:
    """The headline of ``steady_rate_of`` (real tokens/s when known); ``kw`` as there."""
    rate = steady_rate_of(arrivals, tokens_per_step, warmup, **kw)
    return rate.tokens_per_s if rate else None


def rate_fields(rate) -> dict:
    """A ``SteadyRate``'s numbers for a results file (all None without one)."""
    keys = ("real_tokens_per_s", "padded_tokens_per_s", "naive_tokens_per_s", "samples_per_s")
    out = {k: (round(getattr(rate, k), 1) if rate and getattr(rate, k) is not None else None) for k in keys}
    out["short_steps"] = list(rate.short_steps) if rate else []
    out["tokens_counted"] = rate.counted if rate else None
    return out
