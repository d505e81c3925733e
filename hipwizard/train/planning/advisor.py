"""The fastest setting that fits: among configs with the user's effective batch and sequence length, rank
those whose predicted peak fits the device by expected throughput, and say why the pick is faster.

What varies: DeepSpeed (none, ZeRO-2, ZeRO-3, with the offloads each allows), gradient checkpointing on or
off, the micro-batch / accumulation split (their product per GPU stays the user's), eager attention
replaced by SDPA, and where installed (``knobs.KnobAvailability``) Liger's kernels; the predicted-neutral knobs
(``knob_catalog``: torch.compile, FlashAttention-2, the fused or foreach AdamW, loader workers, Unsloth's
kernels and checkpointing, ROCm's TunableOp, length-grouped batches) are offered only once a calibration measured them here, and
``Advice.not_offered`` says why each other knob is not; packing is offered for variable-length data (it changes
what a step holds, so it ranks after the others at equal speed). What never varies: the model, the method, LoRA settings, learning rate, data, the effective
batch and the sequence length. Combinations in ``assets/train_known_bad.yaml`` are never proposed; the
advice says which were left out and why. With a matching ``Calibration``, measured numbers replace
predicted ones (each candidate says which it shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hipwizard.train.calibration.corrections import Calibration, Measurement, Source, source_words
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.knob_catalog import (
    knob_reasons,
    knob_trials,
    knob_variants,
    label_extras,
    neutral_alternatives,
    neutral_change,
    not_offered,
)
from hipwizard.train.planning.knobs import KnobAvailability, exclusion
from hipwizard.train.planning.memory import MemoryEstimate, estimate_memory, trainable_params
from hipwizard.train.planning.model_shape import ModelShape
from hipwizard.train.planning.throughput import Throughput, estimate_throughput
from hipwizard.train.planning.wall import planned_wall

ZERO_CHOICES: tuple[tuple[int | None, bool, bool], ...] = (
    (None, False, False), (2, False, False), (2, True, False), (3, False, False), (3, True, False), (3, True, True),
)
TUNED_FIELDS = ("zero_stage", "offload_optimizer", "offload_param", "disable_gradient_checkpointing",
                "per_device_train_batch_size", "gradient_accumulation_steps", "flash_attn", "enable_liger_kernel",
                "torch_compile", "packing", "optim", "dataloader_num_workers", "use_unsloth", "use_unsloth_gc",
                "tunableop", "group_by_length")


@dataclass
class Candidate:
    config: TrainConfig
    estimate: MemoryEstimate
    throughput: Throughput
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (old, new)
    speedup: float = 1.0
    reasons: list[str] = field(default_factory=list)
    source: Source = "predicted"  # where tokens/s (and, unless memory_source says otherwise, the peak) come from
    measured: Measurement | None = None
    memory_source: Source = "predicted"  # where the peak comes from
    borrowed: bool = False  # calibrated from configs with other settings
    wall_s: float | None = None  # expected wall time of the planned steps (None: no step count planned)
    wall_note: str = ""  # how wall_s was made (measured start-up and checkpoint cost, or the H200 priors)
    wall_source: str = ""  # where its start-up and checkpoint costs come from: "measured here", "prior", ...

    @property
    def source_words(self) -> str:
        """How the faces name where this candidate's numbers come from (never colour alone)."""
        return source_words(self.source, self.memory_source, self.borrowed)

    @property
    def label(self) -> str:
        c = self.config
        ds = "no DeepSpeed" if c.zero_stage is None else f"ZeRO-{c.zero_stage}" + (
            " +offload opt" if c.offload_optimizer else "") + (" +offload param" if c.offload_param else "")
        gc = "ckpt on" if c.gradient_checkpointing else "ckpt off"
        extra = label_extras(c, set(self.changes))
        return f"{ds}, {gc}, batch {c.per_device_train_batch_size} x {c.gradient_accumulation_steps}" + "".join(
            f", {e}" for e in extra)

    @property
    def planned_words(self) -> str:
        """The planned run's expected wall time and how it was made, in words ("" without a planned step count):
        "planned run ~12.8 s; start-up and checkpoints measured here (8 steps x 0.10 s; ...)"."""
        return f"{self.planned_short} ({self.wall_note})" if self.wall_s is not None else ""

    @property
    def planned_short(self) -> str:
        """"planned run ~12.8 s; start-up and checkpoints measured here" ("" without a planned step count)."""
        if self.wall_s is None:
            return ""
        t = f"{self.wall_s:.1f} s" if self.wall_s < 120 else f"{self.wall_s / 60:.1f} min"
        rel = " (relative: what every config pays alike is left out)" if self.wall_source == "prior" else ""
        how = (self.wall_source if self.wall_source.startswith("start-up") else
               f"start-up and checkpoints {self.wall_source}")  # "start-up measured here, checkpoints prior"
        return f"planned run ~{t}{rel}; {how}"

    def to_dict(self) -> dict:
        return {
            "label": self.label, "changes": {k: {"from": a, "to": b} for k, (a, b) in self.changes.items()},
            "tokens_per_s": round(self.throughput.tokens_per_s), "speedup": round(self.speedup, 2),
            "peak_gib": round(self.estimate.total_gib, 1), "fits": self.estimate.fits, "reasons": self.reasons,
            "source": self.source, "memory_source": self.memory_source, "borrowed": self.borrowed,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 1), "wall_note": self.wall_note,
            "wall_source": self.wall_source,
        }


def expected_wall(cand: Candidate, *, steps: int, save_steps: int, tokens_per_step: float, world_size: int = 1,
                  calibration: Calibration | None = None) -> None:
    """Set ``cand.wall_s``: start-up + ``steps`` x the step time + its checkpoints (``wall.planned_wall``: each
    extra measured by ``calibration`` where it can be, else the H200 prior), and say how in ``wall_note``.
    The step time: a measured or calibrated one as it is (a calibration times the run's own world size, whole
    optimizer steps); a predicted one on one GPU as it is, on several the planned tokens per step over the run's
    predicted tokens/s (data-parallel efficiency included). A calibrated rate counts the real tokens a step held,
    so the planned (padded) tokens over it would count the padding as time."""
    rate = cand.throughput.tokens_per_s
    timed = cand.source in ("measured", "calibrated") or world_size == 1
    step_s = (cand.throughput.step_seconds if timed and cand.throughput.step_seconds > 0
              else tokens_per_step / rate if rate > 0 else float("inf"))
    cand.wall_s, cand.wall_note, cand.wall_source = planned_wall(
        cand.config, step_s=step_s, steps=steps, save_steps=save_steps, measured=cand.measured,
        calibration=calibration)


@dataclass
class Advice:
    baseline: Candidate | None
    ranked: list[Candidate] = field(default_factory=list)  # fitting candidates, fastest first
    considered: int = 0
    reason: str = ""  # why there is no advice
    excluded: list[str] = field(default_factory=list)  # known-bad combinations and failed measurements left out
    calibration: str = ""  # which calibration the numbers use, or why none applies
    not_offered: list[str] = field(default_factory=list)  # knobs not proposed here, and why (one line each)
    trials: list[Candidate] = field(default_factory=list)  # the pick with one neutral knob changed (to measure)

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    def to_dict(self, top: int = 5) -> dict:
        return {
            "reason": self.reason, "considered": self.considered,
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "suggestions": [c.to_dict() for c in self.ranked[:top]],
            "excluded": self.excluded, "calibration": self.calibration, "not_offered": self.not_offered,
        }


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_configs(config: TrainConfig, *, deepspeed_available: bool = True, max_micro_batch: int = 64,
                      knobs: KnobAvailability | None = None, packing: bool = False,
                      neutral: dict[str, list[Any]] | None = None):
    """Every variant that keeps the effective batch and sequence length (the user's own included).
    ``knobs`` None: no optional kernels beyond the user's own; ``packing``: also try packed data; ``neutral``:
    the other values of the predicted-neutral knobs to try (``knob_catalog.neutral_alternatives``; None: none)."""
    knobs = knobs or KnobAvailability()
    per_gpu = config.per_device_train_batch_size * config.gradient_accumulation_steps
    neutral = neutral or {}
    attentions = ["disabled", "sdpa"] if config.flash_attn == "disabled" else [config.flash_attn]
    attentions += [a for a in neutral.get("flash_attn", []) if a not in attentions]
    axes: dict[str, list[Any]] = {
        "flash_attn": attentions,
        "enable_liger_kernel": [config.enable_liger_kernel] + (
            [True] if knobs.liger and not config.enable_liger_kernel else []),
        "packing": [config.packing] + ([True] if packing and not config.packs else []),
        **{f: [getattr(config, f), *vs] for f, vs in neutral.items() if f != "flash_attn"},
    }
    for stage, off_opt, off_param in ZERO_CHOICES:
        if stage is not None and not deepspeed_available and stage != config.zero_stage:
            continue
        for no_gc in (False, True):
            for bs in _divisors(per_gpu):
                if bs > max_micro_batch and bs != config.per_device_train_batch_size:
                    continue
                core = {"zero_stage": stage, "offload_optimizer": off_opt, "offload_param": off_param,
                        "disable_gradient_checkpointing": no_gc, "per_device_train_batch_size": bs,
                        "gradient_accumulation_steps": per_gpu // bs}
                for update in knob_variants(config, {**{k: [v] for k, v in core.items()}, **axes}):
                    yield config.model_copy(update=update)


def advise(config: TrainConfig, shape: ModelShape | None, *, vram_gib: float | None, world_size: int = 1,
           seq_len: int | None = None, deepspeed_available: bool = True, lengths: str | None = None,
           knobs: KnobAvailability | None = None, calibration: Calibration | None = None,
           platform: str | None = None, planned_steps: int | None = None, trials: bool = False) -> Advice:
    """Rank the variants of ``config`` that fit ``vram_gib`` by expected tokens/s, or, with ``planned_steps`` (the
    run the user plans: ``max_steps``), by the expected wall time of those steps (``expected_wall``: start-up and
    checkpoint costs count, so a short run is not handed a config that only pays off after its start-up).

    ``lengths`` ("variable" or "fixed") is passed to the memory estimate (see ``estimate_memory``); packed
    variants are estimated as fixed-length. ``knobs``: optional kernels installed (None: none beyond the
    config's own). ``calibration``: measurements of this machine that match this plan (``Calibration``).
    ``trials``: also fill ``Advice.trials``, the pick with each neutral knob changed (what a calibration with
    knobs measures). ``platform`` None: the one ``knobs`` were gathered on.
    """
    if shape is None:
        return Advice(None, reason="no advice: the model's shape is unknown, so memory cannot be estimated")
    if vram_gib is None:
        return Advice(None, reason="no advice: the device's memory is unknown (give the VRAM or run the doctor)")
    seq = max(1, min(seq_len or config.cutoff_len, config.cutoff_len))
    tokens_per_step = config.effective_batch(world_size) * seq

    def evaluate(cfg: TrainConfig) -> Candidate:
        est = estimate_memory(cfg, shape, world_size=world_size, seq_len=seq, device_vram_gib=vram_gib,
                              lengths="fixed" if cfg.packs else lengths)
        cand = Candidate(cfg, est, estimate_throughput(cfg, shape, world_size=world_size, seq_len=seq))
        if calibration is not None:
            got = calibration.apply(cfg, cand.throughput, est, tokens_per_step=tokens_per_step)
            for name in ("throughput", "estimate", "source", "measured", "memory_source", "borrowed"):
                setattr(cand, name, getattr(got, name))
        return cand

    platform = platform or (knobs.platform if knobs else None)
    measured = [m.knobs for m in calibration.measurements] if calibration is not None else []
    trainable = trainable_params(shape, config)
    baseline = evaluate(config)
    # Packed variants are compared with the user's config on packed data too (memory like for like).
    packed_base = evaluate(config.model_copy(update={"packing": True})) if not config.packs else baseline
    variable = (lengths or "variable") == "variable"
    advice = Advice(baseline, not_offered=not_offered(config, knobs or KnobAvailability(), measured))
    bad = exclusion(config, platform)
    if bad is not None:
        advice.excluded.append("your config: " + bad.line(knobs.versions if knobs else None))
    neutral = neutral_alternatives(config, knobs or KnobAvailability(), measured)
    if not variable and not config.group_by_length and not config.packs:  # samples of one length: nothing to group
        neutral["group_by_length"] = []
        advice.not_offered = [line for line in advice.not_offered if not line.startswith("group_by_length ")] + [
            "group_by_length: the samples are of one length (--lengths fixed): no padding to remove"]
    for variant in candidate_configs(config, deepspeed_available=deepspeed_available, knobs=knobs,
                                     packing=variable and config.stage == "sft", neutral=neutral):
        advice.considered += 1
        if neutral_change(config, variant) and (
                calibration is None or calibration.find(variant) is None):
            continue  # predicted to change nothing; only a measurement can recommend it
        if variant != config and (bad := exclusion(variant, platform)) is not None:
            line = bad.line(knobs.versions if knobs else None)
            if line not in advice.excluded:
                advice.excluded.append(line)
            continue
        cand = evaluate(variant)
        if cand.measured is not None and not cand.measured.ok:
            advice.excluded.append(f"{cand.label}: failed when measured here: {cand.measured.error}")
            continue
        if not cand.estimate.fits:
            continue
        ref = packed_base if variant.packs else baseline
        if (baseline.estimate.fits and variant != config and cand.estimate.total_gib >= ref.estimate.total_gib
                and cand.throughput.tokens_per_s <= ref.throughput.tokens_per_s):
            continue  # neither faster nor smaller than what the user has: not advice (e.g. ZeRO-2 on one GPU)
        cand.changes = {f: (getattr(config, f), getattr(variant, f)) for f in TUNED_FIELDS
                        if getattr(config, f) != getattr(variant, f)}
        cand.speedup = cand.throughput.tokens_per_s / baseline.throughput.tokens_per_s
        cand.reasons = explain(baseline, cand, world_size, knobs=knobs, trainable=trainable)
        advice.ranked.append(cand)
    if planned_steps:
        for cand in [baseline, *advice.ranked]:
            expected_wall(cand, steps=planned_steps, save_steps=config.save_steps, tokens_per_step=tokens_per_step,
                          world_size=world_size, calibration=calibration)
    # Fastest first (the planned run's wall time when there is one, else steady tokens/s); at equal speed: not
    # repacking the data, less memory, fewer changes.
    advice.ranked.sort(key=lambda c: (round(c.wall_s, 3) if c.wall_s is not None else 0.0,
                                      -round(c.throughput.tokens_per_s, 6), "packing" in c.changes,
                                      c.estimate.total_gib, len(c.changes)))
    if trials:
        advice.trials = [t for t in _trials(advice, knobs or KnobAvailability(), platform, evaluate)
                         if variable or not t.config.group_by_length or config.group_by_length]
    if not advice.ranked:
        advice.reason = (f"nothing fits in {vram_gib:g} GiB with this effective batch and sequence length; "
                         "try LoRA with a smaller rank, QLoRA (quantization_bit 4), more GPUs or a shorter cutoff_len")
    return advice


def _trials(advice: Advice, knobs: KnobAvailability, platform: str | None, evaluate) -> list[Candidate]:
    """The pick (else the user's config) with one neutral knob changed, each that fits and is not known-bad."""
    pick = advice.best or advice.baseline
    out = []
    for cfg in knob_trials(pick.config, knobs) if pick is not None else []:
        if exclusion(cfg, platform) is None and (cand := evaluate(cfg)).estimate.fits:
            out.append(cand)
    return out


def explain(base: Candidate, cand: Candidate, world_size: int, *, knobs: KnobAvailability | None = None,
            trainable: int | None = None) -> list[str]:
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
    reasons += knob_reasons(a, b, knobs, trainable)
    est = cand.estimate
    how = {"measured": "measured here", "calibrated": "calibrated on this machine",
           "predicted": "H200-calibrated model"}[cand.source]
    if cand.measured is not None and cand.source == "measured":
        m = cand.measured
        reasons.append(f"measured here: {m.tokens_per_s or cand.throughput.tokens_per_s:,.0f} tokens/s steady "
                       f"({m.step_s:.2f} s a step), " + (f"peak {m.peak_gib:.1f} GiB" if m.peak_gib is not None else
                                                         f"peak not measured (predicted {est.total_gib:.1f} GiB)")
                       + f" of {est.device_vram_gib:g} GiB; {cand.speedup:.2f}x your config's "
                       f"{'measured' if base.source == 'measured' else base.source} rate")
    else:
        reasons.append(f"{'predicted' if cand.memory_source == 'predicted' else 'calibrated'} peak {est.total_gib:.1f} GiB "
                       f"of {est.device_vram_gib:g} GiB (margin {est.margin_gib:.1f} GiB); expected "
                       f"{cand.speedup:.2f}x your config's steady-state throughput ({how}"
                       + ("; the recipe -> no DeepSpeed, no checkpointing, 16 x 1 measured 2.88x)"
                          if cand.source == "predicted" else ")"))
    return reasons
