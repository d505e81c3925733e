"""The fastest setting that fits: among configs with the user's effective batch and sequence length, rank
those whose predicted peak fits the device by expected throughput, and say why the pick is faster.

What varies: DeepSpeed (none, ZeRO-2, ZeRO-3, with the offloads each allows), gradient checkpointing on or
off, the micro-batch / accumulation split (their product per GPU stays the user's), and eager attention
replaced by SDPA. What never varies: the model, the method, LoRA settings, learning rate, data, the
effective batch and the sequence length — so the loss curve is the one the user planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hipwizard.train.config import TrainConfig
from hipwizard.train.memory import MemoryEstimate, estimate_memory
from hipwizard.train.model_shape import ModelShape
from hipwizard.train.throughput import Throughput, estimate_throughput

ZERO_CHOICES: tuple[tuple[int | None, bool, bool], ...] = (
    (None, False, False), (2, False, False), (2, True, False), (3, False, False), (3, True, False), (3, True, True),
)
TUNED_FIELDS = ("zero_stage", "offload_optimizer", "offload_param", "disable_gradient_checkpointing",
                "per_device_train_batch_size", "gradient_accumulation_steps", "flash_attn")


@dataclass
class Candidate:
    config: TrainConfig
    estimate: MemoryEstimate
    throughput: Throughput
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (old, new)
    speedup: float = 1.0
    reasons: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        c = self.config
        ds = "no DeepSpeed" if c.zero_stage is None else f"ZeRO-{c.zero_stage}" + (
            " +offload opt" if c.offload_optimizer else "") + (" +offload param" if c.offload_param else "")
        gc = "ckpt on" if c.gradient_checkpointing else "ckpt off"
        return f"{ds}, {gc}, batch {c.per_device_train_batch_size} x {c.gradient_accumulation_steps}" + (
            f", {c.flash_attn}" if c.flash_attn == "sdpa" and "flash_attn" in self.changes else "")

    def to_dict(self) -> dict:
        return {
            "label": self.label, "changes": {k: {"from": a, "to": b} for k, (a, b) in self.changes.items()},
            "tokens_per_s": round(self.throughput.tokens_per_s), "speedup": round(self.speedup, 2),
            "peak_gib": round(self.estimate.total_gib, 1), "fits": self.estimate.fits, "reasons": self.reasons,
        }


@dataclass
class Advice:
    baseline: Candidate | None
    ranked: list[Candidate] = field(default_factory=list)  # fitting candidates, fastest first
    considered: int = 0
    reason: str = ""  # why there is no advice

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    def to_dict(self, top: int = 5) -> dict:
        return {
            "reason": self.reason, "considered": self.considered,
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "suggestions": [c.to_dict() for c in self.ranked[:top]],
        }


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_configs(config: TrainConfig, *, deepspeed_available: bool = True, max_micro_batch: int = 64):
    """Every variant that keeps the effective batch and sequence length (the user's own included)."""
    per_gpu = config.per_device_train_batch_size * config.gradient_accumulation_steps
    attentions = ["disabled", "sdpa"] if config.flash_attn == "disabled" else [config.flash_attn]
    for stage, off_opt, off_param in ZERO_CHOICES:
        if stage is not None and not deepspeed_available and stage != config.zero_stage:
            continue
        for no_gc in (False, True):
            for bs in _divisors(per_gpu):
                if bs > max_micro_batch and bs != config.per_device_train_batch_size:
                    continue
                for attn in attentions:
                    yield config.model_copy(update={
                        "zero_stage": stage, "offload_optimizer": off_opt, "offload_param": off_param,
                        "disable_gradient_checkpointing": no_gc, "per_device_train_batch_size": bs,
                        "gradient_accumulation_steps": per_gpu // bs, "flash_attn": attn,
                    })


def advise(config: TrainConfig, shape: ModelShape | None, *, vram_gib: float | None, world_size: int = 1,
           seq_len: int | None = None, deepspeed_available: bool = True, lengths: str | None = None) -> Advice:
    """Rank the variants of ``config`` that fit ``vram_gib`` by expected tokens/s.

    ``lengths`` ("variable" or "fixed") is passed to the memory estimate (see ``estimate_memory``).
    """
    if shape is None:
        return Advice(None, reason="no advice: the model's shape is unknown, so memory cannot be estimated")
    if vram_gib is None:
        return Advice(None, reason="no advice: the device's memory is unknown (pass --vram)")
    seq = max(1, min(seq_len or config.cutoff_len, config.cutoff_len))

    def evaluate(cfg: TrainConfig) -> Candidate:
        est = estimate_memory(cfg, shape, world_size=world_size, seq_len=seq, device_vram_gib=vram_gib,
                              lengths=lengths)
        return Candidate(cfg, est, estimate_throughput(cfg, shape, world_size=world_size, seq_len=seq))

    baseline = evaluate(config)
    ranked, considered = [], 0
    for variant in candidate_configs(config, deepspeed_available=deepspeed_available):
        considered += 1
        cand = evaluate(variant)
        if not cand.estimate.fits:
            continue
        if (baseline.estimate.fits and variant != config and cand.estimate.total_gib >= baseline.estimate.total_gib
                and cand.throughput.tokens_per_s <= baseline.throughput.tokens_per_s):
            continue  # neither faster nor smaller than what the user has: not advice (e.g. ZeRO-2 on one GPU)
        cand.changes = {f: (getattr(config, f), getattr(variant, f)) for f in TUNED_FIELDS
                        if getattr(config, f) != getattr(variant, f)}
        cand.speedup = cand.throughput.tokens_per_s / baseline.throughput.tokens_per_s
        cand.reasons = explain(baseline, cand, world_size)
        ranked.append(cand)
    ranked.sort(key=lambda c: (-round(c.throughput.tokens_per_s, 6), c.estimate.total_gib))
    if not ranked:
        return Advice(baseline, [], considered,
                      f"nothing fits in {vram_gib:g} GiB with this effective batch and sequence length; "
                      "try LoRA with a smaller rank, QLoRA (quantization_bit 4), more GPUs or a shorter cutoff_len")
    return Advice(baseline, ranked, considered)


def explain(base: Candidate, cand: Candidate, world_size: int) -> list[str]:
    """Why ``cand`` differs from ``base`` in speed, one sentence per change, plus where its memory lands."""
    a, b = base.config, cand.config
    reasons: list[str] = []
    if a.zero_stage == 3 and b.zero_stage != 3:
        where = "on one GPU ZeRO-3 shards nothing" if world_size == 1 else "ZeRO-3 re-gathers every layer each pass"
        reasons.append(f"{where} yet gathers and frees each layer every pass: measured 1.88x slower on an H200 "
                       f"(4,603 vs 8,643 tokens/s, steady state); the model fits without it")
    elif a.zero_stage != b.zero_stage:
        old = "no DeepSpeed" if a.zero_stage is None else f"ZeRO-{a.zero_stage}"
        new = "no DeepSpeed" if b.zero_stage is None else f"ZeRO-{b.zero_stage}"
        more = (b.zero_stage or -1) > (a.zero_stage if a.zero_stage is not None else -1)
        if not more:
            why = "less DeepSpeed work per step, and it still fits"
        elif not base.estimate.fits:
            why = "needed to fit"
        else:
            why = "shards more state; on one H200 ZeRO-2 cost no measurable speed (8,878 vs 8,643 tokens/s)"
        reasons.append(f"{old} -> {new}: {why}")
    if (a.offload_optimizer or a.offload_param) and not (b.offload_optimizer or b.offload_param):
        reasons.append("no offload: optimizer steps and weights stay on the GPU instead of crossing PCIe")
    if a.gradient_checkpointing and not b.gradient_checkpointing:
        reasons.append("gradient checkpointing off: no second forward pass (measured 1.39x on an H200: 8,643 -> "
                       "11,979 tokens/s); the activations it saved fit in the memory left")
    elif b.gradient_checkpointing and not a.gradient_checkpointing:
        reasons.append("gradient checkpointing on: recomputes the forward pass so the activations fit")
    if b.per_device_train_batch_size != a.per_device_train_batch_size:
        bigger = b.per_device_train_batch_size > a.per_device_train_batch_size
        reasons.append(
            f"micro-batch {a.per_device_train_batch_size} -> {b.per_device_train_batch_size} with accumulation "
            f"{a.gradient_accumulation_steps} -> {b.gradient_accumulation_steps} (same effective batch "
            f"{b.effective_batch(world_size)}): " + ("fewer micro-batches, each with a fixed launch and loss "
            "cost (measured on an H200: 11,979 / 12,375 / 13,276 tokens/s at 4 / 8 / 16 sequences)" if bigger
            else "smaller activations, to fit"))
    if a.flash_attn == "disabled" and b.flash_attn == "sdpa":
        reasons.append("SDPA attention instead of eager: no seq x seq score matrix in memory, fused kernels")
    est = cand.estimate
    reasons.append(f"predicted peak {est.total_gib:.1f} GiB of {est.device_vram_gib:g} GiB "
                   f"(margin {est.margin_gib:.1f} GiB); expected {cand.speedup:.2f}x your config's steady-state "
                   "throughput (H200-calibrated: the recipe -> no DeepSpeed, no checkpointing, 16 x 1 measured 2.88x)")
    return reasons
