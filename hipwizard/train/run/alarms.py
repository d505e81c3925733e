"""Training alarms: the few things in a loss log that mean "look now", one line each with the step.

``detect_alarms(points)`` is a pure function over a run's logged steps (``MetricPoint``: step, loss,
grad_norm, tokens/s) and returns every ``Alarm`` in step order. The run view, ``hipwizard attach`` and the
parity post-mortem (which compares two runs' curves) all call it, so an alarm means the same everywhere.

- ``nonfinite``: a loss or grad_norm that is NaN or infinite;
- ``grad_spike``: grad_norm above ``SPIKE_FACTOR`` x the median of the last ``WINDOW`` grad_norms logged before
  it (at least ``MIN_HISTORY`` of them) — an lr jump or a bad batch shows up at the first logged step after it;
- ``throughput_drop``: tokens/s (or steps/s) of a record below ``DROP_FACTOR`` x the median of the earlier
  ones, once ``MIN_HISTORY`` are known (a throttling GPU, a neighbour on the card, swapping);
- ``plateau``: no new best loss for ``PLATEAU_POINTS`` logged steps in a row (the loss has flattened; warmup
  and the first ``PLATEAU_POINTS`` points excluded). Raised once per plateau.

Each kind re-arms when its condition clears, so a run with two spikes gets two lines, not one per step.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from statistics import median
from typing import Iterable, Literal, Mapping, Sequence, TypeGuard

AlarmKind = Literal["nonfinite", "grad_spike", "throughput_drop", "plateau"]
SPIKE_FACTOR = 10.0
DROP_FACTOR = 0.5
MIN_HISTORY = 3
WINDOW = 50  # the running median looks at the last WINDOW values (bounded cost on long runs)
PLATEAU_POINTS = 50
PLATEAU_MIN_GAIN = 0.001  # a new best must beat the old by 0.1% to count as progress
SYMBOL = {"nonfinite": "✖", "grad_spike": "⚠", "throughput_drop": "⚠", "plateau": "ℹ"}


@dataclass(frozen=True)
class MetricPoint:
    """One logged optimizer step; any value may be missing."""

    step: int
    loss: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None  # the rate of this record (not a cumulative average)


@dataclass(frozen=True)
class Alarm:
    kind: AlarmKind
    step: int
    message: str

    def line(self) -> str:
        """``⚠ step 12: grad_norm 41.3 is 52x the running median 0.79``: symbol, step and words."""
        return f"{SYMBOL[self.kind]} step {self.step}: {self.message}"


def _finite(v: float | None) -> TypeGuard[float]:
    return v is not None and math.isfinite(v)


def detect_alarms(points: Iterable[MetricPoint], *, spike_factor: float = SPIKE_FACTOR,
                  drop_factor: float = DROP_FACTOR, plateau_points: int = PLATEAU_POINTS) -> list[Alarm]:
    """Every alarm of a run, in step order (see the module docstring for the rules)."""
    alarms: list[Alarm] = []
    grads: deque[float] = deque(maxlen=WINDOW)
    rates: deque[float] = deque(maxlen=WINDOW)
    armed = {"nonfinite": True, "grad_spike": True, "throughput_drop": True, "plateau": True}
    best: float | None = None
    since_best = 0
    seen = 0
    for p in points:
        seen += 1
        bad = [name for name, v in (("loss", p.loss), ("grad_norm", p.grad_norm))
               if v is not None and not math.isfinite(v)]
        if bad:
            if armed["nonfinite"]:
                alarms.append(Alarm("nonfinite", p.step, " and ".join(f"{n} is {_word(v)}" for n, v in (
                    ("loss", p.loss), ("grad_norm", p.grad_norm)) if n in bad)
                    + ": training has diverged (lower the learning rate, check the data, or use bf16)"))
            armed["nonfinite"] = False
        else:
            armed["nonfinite"] = True
        if _finite(p.grad_norm):
            if len(grads) >= MIN_HISTORY:
                ref = median(grads)
                spike = ref > 0 and p.grad_norm > spike_factor * ref
                if spike and armed["grad_spike"]:
                    alarms.append(Alarm("grad_spike", p.step, f"grad_norm {p.grad_norm:.4g} is "
                                        f"{p.grad_norm / ref:.0f}x the running median {ref:.3g} (> {spike_factor:g}x)"))
                armed["grad_spike"] = not spike
            grads.append(p.grad_norm)
        if _finite(p.tokens_per_s) and p.tokens_per_s > 0:
            if len(rates) >= MIN_HISTORY:
                ref = median(rates)
                drop = p.tokens_per_s < drop_factor * ref
                if drop and armed["throughput_drop"]:
                    alarms.append(Alarm("throughput_drop", p.step, f"throughput {p.tokens_per_s:,.0f}/s is "
                                        f"{p.tokens_per_s / ref:.0%} of the median {ref:,.0f}/s so far"))
                armed["throughput_drop"] = not drop
            rates.append(p.tokens_per_s)
        if _finite(p.loss):
            if best is None or p.loss < best * (1 - PLATEAU_MIN_GAIN):
                best, since_best = p.loss, 0
                armed["plateau"] = True
            else:
                since_best += 1
                if since_best >= plateau_points and seen > 2 * plateau_points and armed["plateau"]:
                    alarms.append(Alarm("plateau", p.step, f"loss has not improved for {since_best} logged "
                                        f"steps (best {best:.4g}): a plateau"))
                    armed["plateau"] = False
    return alarms


def _word(v: float | None) -> str:
    return "NaN" if v is not None and math.isnan(v) else "infinite"


def rate_points(steps: Sequence[int], elapsed: Sequence[float | None], tokens: Sequence[float | None], *,
                min_span_s: float = 4.0) -> list[float | None]:
    """Per-record rates from cumulative counters: tokens (or, without tokens, steps) per second since the
    last record a rate was measured from, once at least ``min_span_s`` have passed (LLaMA-Factory's elapsed
    time has 1 s resolution: over 4 s the rounding moves a rate by at most ~25%, well inside the drop
    factor); records in between get none."""
    out: list[float | None] = [None] * len(steps)
    last = None  # index of the record the next rate is measured from
    last_t = 0.0  # its elapsed time
    for i, t in enumerate(elapsed):
        if t is None:
            continue
        if last is not None and t - last_t >= min_span_s:
            dt = t - last_t
            now_tokens, then_tokens = tokens[i], tokens[last]
            if now_tokens is not None and then_tokens is not None:
                out[i] = (now_tokens - then_tokens) / dt
            else:
                out[i] = (steps[i] - steps[last]) / dt
            last, last_t = i, t
        elif last is None:
            last, last_t = i, t
    return out



def step_key(epoch, loss) -> str | None:
    """The key that pairs a stdout metrics dict with its trainer_log record: epoch and loss to 4 significant
    digits (transformers prints them so; trainer_log.jsonl has them in full). None without an epoch."""
    try:
        e = f"{float(epoch):.4g}"
    except (TypeError, ValueError):
        return None
    try:
        return f"{e}/{float(loss):.4g}"
    except (TypeError, ValueError):
        return f"{e}/-"


def metric_points(points: Sequence, grad_norms: Mapping[str, float]) -> list[MetricPoint]:
    """``MetricPoint``s from a run's trainer_log records (``history.TrainerPoint`` with a loss, in order) and
    the grad_norms of its stdout by ``step_key`` (``logscan.StdoutScan.grad_by_key``). trainer_log.jsonl has
    no grad_norm and the stdout may lag a record or have been read from its tail only, so records and
    dicts are paired by epoch and loss, not by position."""
    rates = rate_points([p.step for p in points], [p.elapsed_s for p in points], [p.total_tokens for p in points])
    return [MetricPoint(p.step, p.loss, grad_norms.get(step_key(p.epoch, p.loss) or ""), r)
            for p, r in zip(points, rates, strict=True)]
