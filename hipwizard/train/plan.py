"""A whole plan for one config: validation issues, memory estimate, advisor ranking — one call.

``make_plan`` is what ``hipwizard train plan`` prints and what the Plan tab shows; both faces read the
same ``Plan``. Nothing here imports torch or llamafactory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.train.advisor import Advice, advise
from hipwizard.train.config import TrainConfig
from hipwizard.train.device import DeviceTarget
from hipwizard.train.memory import MemoryEstimate, estimate_memory
from hipwizard.train.model_shape import ShapeResult
from hipwizard.train.rules import ConfigIssue, RuleContext, check_config


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
            "notes": self.notes,
        }


def make_plan(config: TrainConfig, *, base_dir: Path, device: DeviceTarget, world_size: int = 1,
              seq_len: int | None = None, lengths: str | None = None, field_errors: list[tuple[str, str]] | None = None,
              context: RuleContext | None = None) -> Plan:
    """Validate ``config``, estimate its peak memory on ``device`` and rank faster variants that fit."""
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
    plan.estimate = estimate_memory(config, ctx.shape, world_size=world_size, seq_len=seq_len,
                                    device_vram_gib=device.vram_gib, lengths=lengths)
    shape = ctx.shape.shape if ctx.shape else None
    plan.advice = advise(config, shape, vram_gib=device.vram_gib, world_size=world_size, seq_len=seq_len,
                         deepspeed_available=ctx.deepspeed_installed, lengths=lengths)
    return plan
