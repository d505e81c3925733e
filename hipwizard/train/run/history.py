"""A run's history from trainer_log.jsonl records: loss (raw and smoothed), LR, eval loss, progress, rates.

``throughput`` in LLaMA-Factory's log is tokens since start / seconds since start — a cumulative
average that hides a slowdown. ``current_tokens_per_s`` differences consecutive records instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

_ELAPSED = re.compile(r"(?:(\d+) days?, )?(\d+):(\d{2}):(\d{2})")


def parse_duration(text: Any) -> float | None:
    """"0:01:18" or "1 day, 2:03:04" -> seconds."""
    m = _ELAPSED.fullmatch(str(text).strip()) if text is not None else None
    if not m:
        return None
    days, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return float(((days * 24 + h) * 60 + mi) * 60 + s)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class TrainerPoint:
    """One trainer_log.jsonl record."""

    step: int
    total_steps: int | None = None
    loss: float | None = None
    eval_loss: float | None = None
    lr: float | None = None
    epoch: float | None = None
    percentage: float | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None
    throughput_avg: float | None = None
    total_tokens: float | None = None
    vram_allocated_gb: float | None = None
    vram_reserved_gb: float | None = None

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "TrainerPoint | None":
        step = rec.get("current_steps")
        if not isinstance(step, int):
            return None
        total = rec.get("total_steps")
        return cls(
            step=step, total_steps=total if isinstance(total, int) else None,
            loss=_num(rec.get("loss")), eval_loss=_num(rec.get("eval_loss")), lr=_num(rec.get("lr")),
            epoch=_num(rec.get("epoch")), percentage=_num(rec.get("percentage")),
            elapsed_s=parse_duration(rec.get("elapsed_time")), remaining_s=parse_duration(rec.get("remaining_time")),
            throughput_avg=_num(rec.get("throughput")), total_tokens=_num(rec.get("total_tokens")),
            vram_allocated_gb=_size(rec.get("vram_allocated")), vram_reserved_gb=_size(rec.get("vram_reserved")),
        )


def _size(value: Any) -> float | None:
    """A memory size in GB: never below zero (a CPU run records -0.0, which would print as "-0.0 GB")."""
    n = _num(value)
    return None if n is None else (n if n > 0 else 0.0)


def ema(values: list[float], weight: float = 0.8) -> list[float]:
    """Debiased exponential moving average (TensorBoard's smoothing)."""
    out, last, n = [], 0.0, 0
    for v in values:
        n += 1
        last = last * weight + (1 - weight) * v
        out.append(last / (1 - weight ** n))
    return out


class RunHistory:
    """Everything the run view plots, built from records in arrival order."""

    RATE_WINDOW = 8  # records over which the current rate is measured (elapsed has 1 s resolution)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.loss: list[tuple[int, float]] = []
        self.lr: list[tuple[int, float]] = []
        self.eval_loss: list[tuple[int, float]] = []
        self.points: list[TrainerPoint] = []
        self.last: TrainerPoint | None = None
        self.invalid_lines = 0
        self.sampled = False
        self.records = 0

    def add(self, records: Iterable[dict[str, Any]], invalid: int = 0) -> int:
        """Add records; returns how many were usable."""
        self.invalid_lines += invalid
        used = 0
        for rec in records:
            p = TrainerPoint.from_record(rec)
            if p is None:
                self.invalid_lines += 1
                continue
            used += 1
            self.records += 1
            if self.last is not None and (p.step < self.last.step or (
                    p.loss is not None and self.points and p.step <= self.points[-1].step)):
                self._rewind(p.step)  # resumed: a step at or before one already logged came again
            self.last = p
            if p.loss is not None:
                self.loss.append((p.step, p.loss))
                self.points.append(p)
            if p.lr is not None:
                self.lr.append((p.step, p.lr))
            if p.eval_loss is not None:
                self.eval_loss.append((p.step, p.eval_loss))
        return used

    def _rewind(self, step: int) -> None:
        """A resume from an earlier checkpoint appends to the same log (overwrite_output_dir: false):
        the steps after the checkpoint were redone, so the old ones from ``step`` on are dropped."""
        self.loss = [x for x in self.loss if x[0] < step]
        self.lr = [x for x in self.lr if x[0] < step]
        self.eval_loss = [x for x in self.eval_loss if x[0] < step]
        self.points = [x for x in self.points if x.step < step]

    @property
    def smoothed_loss(self) -> list[tuple[int, float]]:
        return list(zip((s for s, _ in self.loss), ema([v for _, v in self.loss]), strict=True))

    def _window(self) -> tuple[TrainerPoint, TrainerPoint, float] | None:
        """The first and last recent points with a time, and the seconds between them; None: too few."""
        timed = [(p, p.elapsed_s) for p in self.points[-self.RATE_WINDOW:] if p.elapsed_s is not None]
        if len(timed) < 2 or timed[-1][1] <= timed[0][1]:
            return None
        return timed[0][0], timed[-1][0], timed[-1][1] - timed[0][1]

    @property
    def current_tokens_per_s(self) -> float | None:
        w = self._window()
        if w is None or w[0].total_tokens is None or w[1].total_tokens is None:
            return None
        return (w[1].total_tokens - w[0].total_tokens) / w[2]

    @property
    def average_tokens_per_s(self) -> float | None:
        return self.last.throughput_avg if self.last else None

    @property
    def current_steps_per_s(self) -> float | None:
        w = self._window()
        if w is None:
            return None
        a, b, dt = w
        return (b.step - a.step) / dt

    @property
    def progress(self) -> tuple[int, int | None]:
        if self.last is None:
            return 0, None
        return self.last.step, self.last.total_steps

    def summary(self) -> str:
        """"step 120/500 · loss 1.234 · lr 2.0e-05 · 3512 tok/s (avg 3401)" for logs and status lines."""
        if self.last is None:
            return "no step logged yet"
        step, total = self.progress
        parts = [f"step {step}/{total}" if total else f"step {step}"]
        if self.loss:
            parts.append(f"loss {self.loss[-1][1]:.4g}")
        if self.lr:
            parts.append(f"lr {self.lr[-1][1]:.2e}")
        if self.eval_loss:
            parts.append(f"eval {self.eval_loss[-1][1]:.4g}")
        cur, avg = self.current_tokens_per_s, self.average_tokens_per_s
        if cur is not None:
            parts.append(f"{cur:.0f} tok/s (avg {avg:.0f})" if avg is not None else f"{cur:.0f} tok/s")
        if self.last.remaining_s is not None and (total or 0) > step:
            parts.append(f"ETA {fmt_duration(self.last.remaining_s)}")
        return " · ".join(parts)
