"""The wall time of the run the user plans: start-up + steps x the step time + its checkpoints.

A short run is not won by the fastest steady rate: DeepSpeed needs more time to its first step and more per
checkpoint (issue 33, on an H200: ~12 s and ~11 s more than no DeepSpeed). Each extra is taken, per candidate,
from the first of:

1. the median of the calibration's measurements (``Measurement.startup_s`` / ``checkpoint_s``) with the settings
   that change that cost (start-up: DeepSpeed, torch.compile, packing, TunableOp; a checkpoint: DeepSpeed), the
   candidate's own run among them: "measured here" (one start-up on a busy machine varies by seconds; the batch
   split or gradient checkpointing do not change it, so runs that differ only there are pooled);
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

from hipwizard.train.calibration.corrections import Calibration, Measurement
from hipwizard.train.config.train_config import TrainConfig

# What DeepSpeed costs beyond its steps, measured on an H200 (issue 33: ZeRO-2 vs no DeepSpeed, 8B LoRA, 16 x 1;
# /work/shared/gpu-box notes): ~12 s more to the first step, ~11 s more per checkpoint. Priors: used only where
# this machine's calibration did not measure them.
DS_STARTUP_S = 12.0
DS_CHECKPOINT_S = 11.0
DS_FIELDS = ("zero_stage", "offload_optimizer", "offload_param")
# What changes the time to the first steady step beyond DeepSpeed: compilation, packing the data, TunableOp's
# tuning of each new GEMM shape on the first steps, the length-grouped sampler reading every sample's length.
STARTUP_FIELDS = (*DS_FIELDS, "torch_compile", "packing", "neat_packing", "tunableop", "group_by_length")


@dataclass(frozen=True)
class Extra:
    """One cost beyond the steady steps: its seconds and where they come from, in words."""

    seconds: float
    source: str  # "measured here", "measured here + prior" or "prior"
    words: str


def saves(steps: int, save_steps: int) -> int:
    """Checkpoints a run of ``steps`` writes: every ``save_steps``, and at the end (transformers' last-step save)."""
    return math.ceil(steps / max(1, save_steps)) if steps > 0 else 0


def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def extra(config: TrainConfig, measured: Measurement | None, calibration: Calibration | None, *, attr: str,
          prior: float, fields: tuple[str, ...]) -> Extra:
    """``attr`` ("startup_s" or "checkpoint_s") for ``config``: the median of the calibration's runs that share its
    ``fields`` (the settings that change this cost), else of those with its DeepSpeed setting, else one measured
    with another DeepSpeed setting moved by the prior, else the prior (see the module). A median, not the config's
    own run alone: one start-up on a loaded machine varies by seconds, the batch split does not change it."""
    ds = config.zero_stage is not None
    seen = [(m, v) for m in (calibration.good if calibration else []) if (v := getattr(m, attr)) is not None]
    named = "DeepSpeed setting" if fields == DS_FIELDS else "DeepSpeed, compile and packing settings"
    for keys, what in ((fields, named), (DS_FIELDS, "DeepSpeed setting")):
        pool = [(m, v) for m, v in seen if all(m.knobs.get(f) == getattr(config, f) for f in keys)]
        if pool:
            v = _median([v for _, v in pool])
            if len(pool) == 1:
                why = "" if pool[0][0] is measured else f" (a run with the same {what})"
            else:
                why = f" (median of {len(pool)} runs with the same {what})"
            return Extra(v, "measured here", f"{v:.2f} s measured here{why}")
    if seen:
        moved = [v + prior * (int(ds) - int(m.knobs.get("zero_stage") is not None)) for m, v in seen]
        v = max(0.0, _median(moved))
        sign = "+" if ds else "-"
        return Extra(v, "measured here + prior", f"{v:.2f} s (measured here with another DeepSpeed setting "
                                                 f"{sign} {prior:g} s, H200 prior)")
    if ds:
        return Extra(prior, "prior", f"+{prior:g} s for DeepSpeed (H200 prior, not timed here)")
    return Extra(0.0, "prior", "no DeepSpeed extra (prior, not timed here)")


def planned_wall(config: TrainConfig, *, step_s: float, steps: int, save_steps: int, measured: Measurement | None,
                 calibration: Calibration | None) -> tuple[float, str, str]:
    """(seconds, how they were made in words, source of the extras: "measured here" / "prior" / mixed)."""
    start = extra(config, measured, calibration, attr="startup_s", prior=DS_STARTUP_S, fields=STARTUP_FIELDS)
    ckpt = extra(config, measured, calibration, attr="checkpoint_s", prior=DS_CHECKPOINT_S, fields=DS_FIELDS)
    n = saves(steps, save_steps)
    wall = start.seconds + steps * step_s + n * ckpt.seconds
    how = (f"{steps} steps x {step_s:.2f} s; start-up {start.words}; "
           f"{n} checkpoint{'s' if n != 1 else ''} x {ckpt.words}")
    sources = {start.source, ckpt.source}
    source = sources.pop() if len(sources) == 1 else f"start-up {start.source}, checkpoints {ckpt.source}"
    return wall, how, source
