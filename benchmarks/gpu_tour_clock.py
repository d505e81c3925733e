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


def steady_tokens_per_s(arrivals: dict[int, float], tokens_per_step: float, warmup: int) -> float | None:
    steps = sorted(s for s in arrivals if s >= warmup)
    if len(steps) < 2:
        return None
    first, last = steps[0], steps[-1]
    return (last - first) * tokens_per_step / (arrivals[last] - arrivals[first])


