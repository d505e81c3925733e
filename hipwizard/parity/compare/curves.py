"""Overlay two training runs' loss curves (LLaMA-Factory ``trainer_log.jsonl``) and measure their gap.

Both curves are smoothed with the same exponential moving average (raw per-step loss is noisy enough
that two correct runs cross each other), aligned on the steps both logged, and compared: max and mean
absolute gap, and the first step where the smoothed gap exceeds a threshold.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hipwizard.errors import UserError

LOG_NAME = "trainer_log.jsonl"


@dataclass
class LossCurve:
    """(step, loss) points of one run, plus how many lines could not be read."""

    name: str
    steps: list[int]
    losses: list[float]
    skipped: int = 0


@dataclass
class CurveGap:
    """Divergence between two runs after smoothing."""

    a: LossCurve
    b: LossCurve
    smoothing: float
    threshold: float
    common_steps: list[int] = field(default_factory=list)
    smooth_a: list[float] = field(default_factory=list)
    smooth_b: list[float] = field(default_factory=list)
    max_gap: float = 0.0
    max_gap_step: int | None = None
    mean_gap: float = 0.0
    exceeds_at: int | None = None

    @property
    def diverged(self) -> bool:
        return self.exceeds_at is not None

    def headline(self) -> str:
        if self.diverged:
            return (f"✖ diverged — smoothed loss gap passes {self.threshold:g} at step {self.exceeds_at} "
                    f"(max {self.max_gap:.4g} at step {self.max_gap_step})")
        return (f"✔ match — max smoothed loss gap {self.max_gap:.4g} ≤ {self.threshold:g} over "
                f"{len(self.common_steps)} common steps (mean {self.mean_gap:.4g})")

    def as_dict(self) -> dict:
        d = asdict(self)
        d["diverged"] = self.diverged
        d["headline"] = self.headline()
        return d


def find_log(run: str | Path) -> Path:
    """A run folder's trainer_log.jsonl (or the file itself)."""
    path = Path(run)
    if path.is_dir():
        path = path / LOG_NAME
    if not path.is_file():
        raise UserError(f"{run}: no {LOG_NAME} (is it a LLaMA-Factory output folder?)")
    return path


def read_curve(run: str | Path) -> LossCurve:
    """Loss by step from a LLaMA-Factory run. Lines without a loss (the final summary line) are
    skipped silently; unreadable lines (a run killed mid-write) are counted in ``skipped``. A loss that is
    not a finite number (``1e999``, ``NaN``) raises ``UserError`` naming the line: no gap can be measured
    against it, and calling it "diverged" would blame the port for a log it cannot read."""
    path = find_log(run)
    by_step: dict[int, float] = {}
    skipped = 0
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            step = int(rec["current_steps"])
        except (ValueError, KeyError, TypeError, OverflowError):
            skipped += 1
            continue
        loss = rec.get("loss")
        if isinstance(loss, (int, float)) and not isinstance(loss, bool):
            if not math.isfinite(loss):
                raise UserError(f"{path}: line {number}: loss {loss} is not a finite number (overflowed or "
                                "written wrong); the curves cannot be compared")
            by_step[step] = float(loss)  # a resumed run re-logs steps: the last word wins
    if not by_step:
        raise UserError(f"{path} holds no loss values")
    steps = sorted(by_step)
    name = path.parent.name if path.name == LOG_NAME else path.stem
    return LossCurve(name, steps, [by_step[s] for s in steps], skipped)


def ema(values: list[float], alpha: float) -> list[float]:
    """Exponential moving average; ``alpha`` = weight of the newest value (1.0 = no smoothing)."""
    out: list[float] = []
    for v in values:
        out.append(v if not out else alpha * v + (1 - alpha) * out[-1])
    return out


def compare_curves(a: LossCurve, b: LossCurve, *, smoothing: float = 0.3, threshold: float = 0.05) -> CurveGap:
    """Smooth both curves on their common steps and measure the gap (absolute loss units)."""
    if not 0 < smoothing <= 1:
        raise UserError("--smoothing must be in (0, 1] (1 = raw values)")
    if not 0 < threshold < math.inf:
        raise UserError(f"--threshold must be a positive number, not {threshold:g}")
    la, lb = dict(zip(a.steps, a.losses, strict=True)), dict(zip(b.steps, b.losses, strict=True))
    common = sorted(set(la) & set(lb))
    if not common:
        raise UserError(f"runs {a.name} and {b.name} logged no step in common")
    sa, sb = ema([la[s] for s in common], smoothing), ema([lb[s] for s in common], smoothing)
    gaps = [abs(x - y) for x, y in zip(sa, sb, strict=True)]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    exceeds = next((common[i] for i, g in enumerate(gaps) if g > threshold), None)
    return CurveGap(a, b, smoothing, threshold, common, sa, sb, max_gap=gaps[worst], max_gap_step=common[worst],
                    mean_gap=sum(gaps) / len(gaps), exceeds_at=exceeds)
