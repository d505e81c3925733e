"""When a run is stalled: live processes and no new step for max(k x the median step time, a floor).

The run's watchdog (``watchdog``, a thread of the supervisor, alive as long as the run) sees each
trainer_log.jsonl record arrive and keeps the wall-clock gaps between them; ``StallClock`` turns those into
a verdict. What it decided lives in ``stall.json`` of the run folder, so ``hipwizard runs``, ``attach`` and the
Run view (other processes, any time) read the same verdict without watching themselves; ``read_stall``
trusts the file only while it is about the log as it is now (no record arrived after it was written).

A record is one logged step (``logging_steps`` optimizer steps): the median gap between records is the
"step time" the threshold scales. Before the second record there is no median: the start-up floor applies
(model loading, tokenising, the first compile), counted from the launch.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median

from hipwizard.atomic import atomic_write_json

STALL_NAME = "stall.json"
STALL_K = 3.0  # k: the threshold is k x the median gap between logged steps ...
STALL_FLOOR_S = 300.0  # ... but never below this (a checkpoint save or an eval pass is a long gap, not a stall)
STARTUP_FLOOR_S = 1800.0  # before the first steps: loading a 70B model and tokenising can take this long
WINDOW = 50  # gaps the median looks at (the recent pace, bounded cost)


@dataclass(frozen=True)
class StallPolicy:
    k: float = STALL_K
    floor_s: float = STALL_FLOOR_S
    startup_s: float = STARTUP_FLOOR_S

    @classmethod
    def from_dict(cls, data: object) -> StallPolicy:
        """A policy from run.json's ``stall`` entry; missing or wrong values take the defaults."""
        if not isinstance(data, dict):
            return cls()

        def num(key: str, default: float) -> float:
            v = data.get(key)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else default

        return cls(num("k", STALL_K), num("floor_s", STALL_FLOOR_S), num("startup_s", STARTUP_FLOOR_S))


@dataclass(frozen=True)
class StallVerdict:
    """``stalled``: no step for ``idle_s`` >= ``threshold_s``. ``median_step_s`` None before two records."""

    stalled: bool
    idle_s: float
    threshold_s: float
    median_step_s: float | None
    step: int | None  # the last step logged
    last_step_at: float  # wall clock (epoch s) of the last record, or of the launch before any
    detected_at: float | None = None  # when the watchdog decided it was stalled
    log_size: int = 0  # trainer_log.jsonl's size then: a bigger file means steps came after

    def line(self) -> str:
        pace = f"{self.median_step_s:.1f} s median per logged step" if self.median_step_s is not None \
            else "no step yet"
        where = f"after step {self.step}" if self.step is not None else "before the first step"
        return (f"no new step for {self.idle_s:.0f} s {where} (threshold {self.threshold_s:.0f} s: "
                f"{pace}); its processes are alive")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> StallVerdict | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(stalled=data["stalled"] is True, idle_s=float(data["idle_s"]),
                       threshold_s=float(data["threshold_s"]),
                       median_step_s=None if data.get("median_step_s") is None else float(data["median_step_s"]),
                       step=data["step"] if isinstance(data.get("step"), int) else None,
                       last_step_at=float(data["last_step_at"]),
                       detected_at=None if data.get("detected_at") is None else float(data["detected_at"]),
                       log_size=int(data.get("log_size") or 0))
        except (KeyError, TypeError, ValueError):
            return None


class StallClock:
    """Arrival times of a run's records -> a ``StallVerdict`` at any moment (pure given the times fed)."""

    def __init__(self, started_at: float, policy: StallPolicy | None = None) -> None:
        self.policy = policy or StallPolicy()
        self.started_at = started_at
        self.arrivals: list[float] = []
        self.step: int | None = None

    def record(self, at: float, step: int | None, *, count: int = 1, within_s: float = 0.0) -> None:
        """``count`` records read at wall time ``at``, all written in the ``within_s`` seconds before it (the
        watchdog's poll interval). One record is one arrival. A burst of several is spread evenly over that
        interval: steps faster than the poll (a tiny model, a log read late) would otherwise leave one
        arrival and no median, and a stall after them would wait for the start-up floor instead of the
        pace's threshold. Spreading gives an upper bound of the real step time, so the threshold stays
        on the safe side. A read at the same instant as the last arrival adds none (zero gaps)."""
        times = [at]
        if count > 1 and within_s > 0:
            times = [at - within_s + within_s * (i + 1) / count for i in range(count)]
        last = self.arrivals[-1] if self.arrivals else None
        fresh = [t for t in times if last is None or t - last >= 1e-3]
        if fresh:
            self.arrivals = (self.arrivals + fresh)[-(WINDOW + 1):]
        self.step = step if step is not None else self.step

    @property
    def median_step_s(self) -> float | None:
        gaps = [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]
        return median(gaps) if gaps else None

    def threshold_s(self) -> float:
        med = self.median_step_s
        if med is None:
            return self.policy.startup_s if not self.arrivals else max(self.policy.floor_s, self.policy.startup_s / 4)
        return max(self.policy.k * med, self.policy.floor_s)

    def verdict(self, now: float, log_size: int = 0) -> StallVerdict:
        last = self.arrivals[-1] if self.arrivals else self.started_at
        idle, threshold = max(0.0, now - last), self.threshold_s()
        stalled = idle >= threshold
        return StallVerdict(stalled, idle, threshold, self.median_step_s, self.step, last,
                            now if stalled else None, log_size)


def write_stall(run_dir: str | Path, verdict: StallVerdict) -> None:
    atomic_write_json(Path(run_dir) / STALL_NAME, verdict.to_dict())


def clear_stall(run_dir: str | Path) -> None:
    try:
        (Path(run_dir) / STALL_NAME).unlink()
    except OSError:
        pass


def read_stall(run_dir: str | Path, trainer_log: str | Path) -> StallVerdict | None:
    """The watchdog's stall verdict while it still holds: None when there is none, or when the trainer
    log grew since (steps came again and the watchdog has not yet cleared the file)."""
    try:
        data = json.loads((Path(run_dir) / STALL_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    verdict = StallVerdict.from_dict(data)
    if verdict is None or not verdict.stalled:
        return None
    try:
        size = os.stat(trainer_log).st_size
    except OSError:
        size = 0
    return verdict if size <= verdict.log_size else None
