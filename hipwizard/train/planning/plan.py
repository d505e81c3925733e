"""A whole plan for one config: validation issues, memory estimate, advisor ranking — one call.

``make_plan`` is what ``hipwizard train plan`` prints and what the Plan tab shows; both faces read the
same ``Plan``. Nothing here imports torch or llamafactory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.train.calibration.corrections import Calibration, calibration_key, key_mismatch
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.advisor import Advice, advise
from hipwizard.train.planning.ceiling import Ceiling
from hipwizard.train.planning.device import DeviceTarget
from hipwizard.train.planning.knobs import KnobAvailability, installed_versions
from hipwizard.train.planning.memory import MemoryEstimate, estimate_memory
from hipwizard.train.planning.model_shape import ShapeResult
from hipwizard.train.planning.rules import ConfigIssue, RuleContext, check_config


@dataclass
class Plan:
    config: TrainConfig
    device: DeviceTarget
    world_size: int
    issues: list[ConfigIssue] = field(default_factory=list)
    shape: ShapeResult | None = None
    estimate: MemoryEstimate | None = None
    advice: Advice | None = None
    notes: list[str] = field(default_factory=list)
    source: str = "predicted"  # of the memory estimate: predicted, calibrated or measured
    ceiling: Ceiling | None = None

    @property
    def errors(self) -> list[ConfigIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "valid": self.valid,
            "issues": [{"field": i.field, "severity": i.severity, "message": i.message} for i in self.issues],
            "device": {"name": self.device.name, "vram_gib": self.device.vram_gib, "arch": self.device.arch,
                       "source": self.device.source},
            "world_size": self.world_size,
            "model": {"architecture": self.shape.architecture if self.shape else "",
                      "params": self.shape.shape.total_params if self.shape and self.shape.shape else None,
                      "source": self.shape.reason if self.shape else ""},
            "estimate": self.estimate.to_dict() if self.estimate else None,
            "advice": self.advice.to_dict() if self.advice else None,
            "estimate_source": self.source,
            "ceiling_tflops": self.ceiling.tflops if self.ceiling else None,
            "notes": self.notes,
        }


def make_plan(config: TrainConfig, *, base_dir: Path, device: DeviceTarget, world_size: int = 1,
              seq_len: int | None = None, lengths: str | None = None, field_errors: list[tuple[str, str]] | None = None,
              context: RuleContext | None = None, calibrations: list[Calibration] | None = None,
              knobs: KnobAvailability | None = None, ceiling: Ceiling | None = None, trials: bool = False) -> Plan:
    """Validate ``config``, estimate its peak memory on ``device`` and rank faster variants that fit.
    ``calibrations`` (newest first): the first whose key matches this plan replaces predictions by
    measurements (``calibration.Calibration``); ``knobs``: optional kernels installed; ``trials``: also the
    pick with each predicted-neutral knob changed (``Advice.trials``, what a calibration with knobs measures)."""
    ctx = context or RuleContext.gather(config, base_dir, device)
    issues = [ConfigIssue(f.split(".")[0], "error", msg) for f, msg in (field_errors or [])]
    issues += check_config(config, ctx)
    plan = Plan(config, device, world_size, issues, ctx.shape)
    if field_errors:
        # The config holds defaults where its values could not be read: an estimate or a "your config"
        # line computed from them would describe a config nobody wrote.
        bad = ", ".join(dict.fromkeys(f.split(".")[0] for f, _ in field_errors))
        reason = f"no estimate until these values are fixed: {bad}"
        plan.estimate = MemoryEstimate(reason=reason, device_vram_gib=device.vram_gib)
        plan.advice = Advice(None, reason=reason)
        return plan
    plan.ceiling = ceiling
    plan.estimate = estimate_memory(config, ctx.shape, world_size=world_size, seq_len=seq_len,
                                    device_vram_gib=device.vram_gib, lengths=lengths)
    shape = ctx.shape.shape if ctx.shape else None
    calibration, why = matching_calibration(calibrations or [], config, device, world_size, shape,
                                            seq_len, lengths, knobs)
    plan.advice = advise(config, shape, vram_gib=device.vram_gib, world_size=world_size, seq_len=seq_len,
                         deepspeed_available=ctx.deepspeed_installed, lengths=lengths, knobs=knobs,
                         calibration=calibration, planned_steps=config.max_steps if config.max_steps > 0 else None,
                         trials=trials)
    plan.advice.calibration = why
    if calibration is not None and plan.advice.baseline is not None and plan.estimate.available:
        plan.estimate, plan.source = plan.advice.baseline.estimate, plan.advice.baseline.memory_source
    return plan


def matching_calibration(calibrations: list[Calibration], config: TrainConfig, device: DeviceTarget,
                         world_size: int, shape, seq_len: int | None, lengths: str | None,
                         knobs: KnobAvailability | None) -> tuple[Calibration | None, str]:
    """The newest calibration valid for this plan, and one line saying which (or why none applies)."""
    if not calibrations:
        return None, "no calibration (hipwizard train calibrate measures the top candidates here)"
    seq = max(1, min(seq_len or config.cutoff_len, config.cutoff_len))
    versions = knobs.versions if knobs is not None else installed_versions()
    key = calibration_key(config, gpu=device.name, world_size=world_size, params=shape.total_params if shape else None,
                          seq_len=seq, lengths=lengths, versions=versions)
    first_why = ""
    for cal in calibrations:
        why = key_mismatch(cal.key, key)
        if not why:
            return cal, (f"calibrated on {cal.machine or '?'} ({cal.created[:16]}): {len(cal.good)} config(s) "
                         "measured; tokens/s and peaks say measured, calibrated or predicted")
        first_why = first_why or why
    return None, f"the saved calibration does not match this plan ({first_why}): predictions only"
