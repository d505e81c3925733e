"""The wall time of the run the user plans: start-up + steps x the step time + its checkpoints.

A short run is not won by the fastest steady rate: DeepSpeed needs more time to its first step and more per
checkpoint (issue 33, on an H200: ~12 s and ~11 s more than no DeepSpeed). Each extra is taken, per candidate,
from the first of:

1. the candidate's own calibration measurement (``Measurement.startup_s`` / ``checkpoint_s``): "measured here";
2. the median of the measurements with the same DeepSpeed setting (stage and offloads): "measured here";
3. measurements with other DeepSpeed settings, moved by the H200 prior's difference (+12 s start-up, +11 s a
   checkpoint for DeepSpeed over none): "measured here + prior";
4. no calibration measured it: the H200 prior alone, relative to no DeepSpeed (which counts 0): "prior".

Within one plan every candidate gets an absolute number (cases 1-3) or every one a relative one (case 4), so the
ranking compares like with like; only differences between candidates decide it.

Checkpoints: LLaMA-Factory saves every ``save_steps`` and, with transformers' step strategy, once more at the end
(``DefaultFlowCallback``: the last step always saves): ``ceil(steps / save_steps)`` saves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hipwizard.train.calibration.corrections import Calibration, Measurement
from hipwizard.train.config.train_config import TrainConfig

# What DeepSpeed costs beyond its steps, measured on an H200 (issue 33: ZeRO-2 vs no DeepSpeed, 8B LoRA, 16 x 1;
# /work/shared/gpu-box notes): ~12 s more to the first step, ~11 s more per checkpoint. Priors: used only where
# this machine's calibration did not measure them.
DS_STARTUP_S = 12.0
DS_CHECKPOINT_S = 11.0
DS_FIELDS = ("zero_stage", "offload_optimizer", "offload_param")


@dataclass(frozen=True)
class Extra:
    """One cost beyond the steady steps: its seconds and where they come from, in words."""

    seconds: float
    source: str  # "measured here", "measured here + prior" or "prior"
    words: str


def saves(steps: int, save_steps: int) -> int:
    """Checkpoints a run of ``steps`` writes: every ``save_steps``, and at the end (transformers' last-step save)."""
    return math.ceil(steps / max(1, save_steps)) if steps > 0 else 0


def _deepspeed(knobs: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(knobs.get(f) for f in DS_FIELDS)


def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def extra(config: TrainConfig, measured: Measurement | None, calibration: Calibration | None, *, attr: str,
          prior: float) -> Extra:
    """``attr`` ("startup_s" or "checkpoint_s") for ``config``: measured, borrowed, or the prior (see the module)."""
    mine = {f: getattr(config, f) for f in DS_FIELDS}
    ds = config.zero_stage is not None
    own = getattr(measured, attr) if measured is not None and measured.ok else None
    if own is not None:
        return Extra(own, "measured here", f"{own:.2f} s measured here")
    seen = [(m, v) for m in (calibration.good if calibration else []) if (v := getattr(m, attr)) is not None]
    same = [v for m, v in seen if _deepspeed(m.knobs) == _deepspeed(mine)]
    if same:
        v = _median(same)
        return Extra(v, "measured here", f"{v:.2f} s measured here (same DeepSpeed setting)")
    if seen:
        moved = [v + prior * (int(ds) - int(m.knobs.get("zero_stage") is not None)) for m, v in seen]
        v = max(0.0, _median(moved))
        sign = "+" if ds else "-"
        return Extra(v, "measured here + prior", f"{v:.2f} s (measured here with another DeepSpeed setting "
                                                 f"{sign} {prior:g} s, H200 prior)")
    if ds:
        return Extra(prior, "prior", f"+{prior:g} s for DeepSpeed (H200 prior, not measured here)")
    return Extra(0.0, "prior", "no DeepSpeed extra (prior, not measured here)")


def planned_wall(config: TrainConfig, *, step_s: float, steps: int, save_steps: int, measured: Measurement | None,
                 calibration: Calibration | None) -> tuple[float, str, str]:
    """(seconds, how they were made in words, source of the extras: "measured here" / "prior" / mixed)."""
    start = extra(config, measured, calibration, attr="startup_s", prior=DS_STARTUP_S)
    ckpt = extra(config, measured, calibration, attr="checkpoint_s", prior=DS_CHECKPOINT_S)
    n = saves(steps, save_steps)
    wall = start.seconds + steps * step_s + n * ckpt.seconds
    how = (f"{steps} steps x {step_s:.2f} s; start-up {start.words}; "
           f"{n} checkpoint{'s' if n != 1 else ''} x {ckpt.words}")
    sources = {start.source, ckpt.source}
    source = sources.pop() if len(sources) == 1 else "start-up " + start.source + ", checkpoints " + ckpt.source
    return wall, how, source
