"""The knobs beyond DeepSpeed, checkpointing and the batch split (issue 34): for each, when it is offered and why.

Each knob is a ``TrainConfig`` field, and each is in the calibration's ``KIND_FIELDS``, so a measurement of one
setting is never read as another's (a family: ``corrections.Calibration``). Two kinds:

- *predicted*: the H200 time model has a measured term for it (SDPA for eager, Liger, packing): ranked from the
  start, like the batch split;
- *neutral* (``NEUTRAL_FIELDS``): no measured term, so the model predicts no change; offered only for a config
  a calibration measured here (``neutral_alternatives`` only yields the values a calibration holds), and
  ``knob_trials`` is what a calibration with knobs runs to measure them:

  torch_compile (installed torch), flash_attn fa2 (flash-attn installed; on ROCm the CK or Triton build, said),
  optim (adamw_torch foreach <-> adamw_torch_fused), dataloader_num_workers (0 <-> 4), use_unsloth_gc (with
  gradient checkpointing), use_unsloth (unsloth installed, NVIDIA only), tunableop (ROCm only: on CUDA every
  GEMM resolved to "Default", +0.2%, noise; /work/shared/gpu-box/README.md), group_by_length (unpacked data:
  the HF Trainer's length-grouped batches; the time model counts no padding, so only a calibration on the user's
  own data, counting real tokens, can tell its gain).

``not_offered`` says, one line each, why a knob LLaMA-Factory 0.9.5 exposes is not proposed on this machine.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from hipwizard.train.config.launch_knobs import TUNABLEOP_RESULTS
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.knobs import KnobAvailability
from hipwizard.train.planning.rules import FP8_MEMORY_WORDS

NEUTRAL_FIELDS = ("torch_compile", "flash_attn", "optim", "dataloader_num_workers", "use_unsloth", "use_unsloth_gc",
                  "tunableop", "group_by_length")
FOREACH, FUSED = "adamw_torch", "adamw_torch_fused"
TRIAL_WORKERS = 4  # the loader processes a knob trial tries against 0


def default_optim(versions: dict[str, str]) -> str:
    """The HF Trainer's optimizer when ``optim`` is unset: transformers (>= 4.56) picks adamw_torch_fused with
    torch >= 2.8, else adamw_torch (``TrainingArguments.default_optim``)."""
    torch = versions.get("torch", "")
    try:
        major, minor = (int(p) for p in torch.split("+")[0].split(".")[:2])
    except ValueError:
        return FUSED if not torch else FOREACH
    return FUSED if (major, minor) >= (2, 8) else FOREACH


def optim_of(config: TrainConfig, versions: dict[str, str]) -> str:
    return config.optim or default_optim(versions)


def _offered(config: TrainConfig, knobs: KnobAvailability) -> dict[str, list[Any]]:
    """Every neutral knob's other values this machine can run, before any measurement."""
    out: dict[str, list[Any]] = {f: [] for f in NEUTRAL_FIELDS}
    if knobs.compile and not config.torch_compile:
        out["torch_compile"].append(True)
    if knobs.fa2 and config.flash_attn != "fa2" and (config.bf16 or config.fp16):
        out["flash_attn"].append("fa2")
    optim = optim_of(config, knobs.versions)
    if optim in (FOREACH, FUSED):
        out["optim"].append(FUSED if optim == FOREACH else FOREACH)
    out["dataloader_num_workers"].append(TRIAL_WORKERS if config.dataloader_num_workers == 0 else 0)
    if config.gradient_checkpointing and not config.use_unsloth_gc:
        out["use_unsloth_gc"].append(True)
    if knobs.unsloth and knobs.platform == "cuda" and config.finetuning_type == "lora" and not config.use_unsloth:
        out["use_unsloth"].append(True)
    if knobs.platform == "rocm" and not config.tunableop:
        out["tunableop"].append(True)
    if not config.packs and not config.group_by_length and config.stage == "sft":
        out["group_by_length"].append(True)
    return out


def neutral_alternatives(config: TrainConfig, knobs: KnobAvailability,
                         measured: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per neutral knob, the other values to try: those this machine can run AND a calibration measured
    (``measured``: the measurements' knob dicts). Nothing measured: nothing neutral is tried."""
    seen = {f: {m.get(f) for m in measured} for f in NEUTRAL_FIELDS}
    return {f: [v for v in values if v in seen[f]] for f, values in _offered(config, knobs).items()}


def neutral_change(config: TrainConfig, variant: TrainConfig) -> bool:
    """Whether ``variant`` changes a neutral knob of ``config`` (offered only once measured). The attention
    counts only for FlashAttention-2: SDPA for eager is a predicted change."""
    return any(getattr(config, f) != getattr(variant, f) for f in NEUTRAL_FIELDS if f != "flash_attn") or (
        variant.flash_attn == "fa2" != config.flash_attn)


def knob_variants(config: TrainConfig, axes: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """The updates of every combination of ``axes`` (field -> values, the config's own first); Unsloth's
    checkpointing only where checkpointing is on, length-grouped batches only unpacked (neither has anything to
    act on otherwise)."""
    names = list(axes)
    for values in itertools.product(*(axes[n] for n in names)):
        update = dict(zip(names, values, strict=True))
        if update.get("use_unsloth_gc") and not config.use_unsloth_gc and update.get(
                "disable_gradient_checkpointing", config.disable_gradient_checkpointing):
            continue
        if update.get("group_by_length") and not config.group_by_length and update.get("packing"):
            continue  # packed sequences all have the cutoff's length: nothing to group
        yield update


def knob_trials(config: TrainConfig, knobs: KnobAvailability) -> list[TrainConfig]:
    """``config`` with one neutral knob changed, one config per value this machine can run: what a calibration
    with knobs measures beside its top candidates (known-bad combinations are the caller's to drop)."""
    return [config.model_copy(update={f: v}) for f, values in _offered(config, knobs).items() for v in values]


def label_extras(c: TrainConfig, changed: set[str]) -> list[str]:
    """Short words for the knobs a candidate's label shows (beyond DeepSpeed, checkpointing and batch); the
    optimizer and the loader workers only where the candidate changes them."""
    extra = [name for on, name in ((c.enable_liger_kernel, "Liger"), (c.torch_compile, "compile"),
                                   (c.packing and not c.neat_packing, "packing"), (c.neat_packing, "neat packing"),
                                   (c.use_unsloth, "Unsloth"), (c.use_unsloth_gc, "Unsloth ckpt"),
                                   (c.tunableop, "TunableOp"), (c.group_by_length, "length-grouped"),
                                   (c.fp8, "FP8")) if on]
    if c.flash_attn in ("sdpa", "fa2") and "flash_attn" in changed or c.flash_attn == "fa2":
        extra.append(c.flash_attn)
    if "optim" in changed:
        extra.append("fused AdamW" if c.optim == FUSED else "foreach AdamW" if c.optim == FOREACH else str(c.optim))
    if "dataloader_num_workers" in changed:
        extra.append(f"{c.dataloader_num_workers} loader workers")
    return extra


# Issue 34's measurements (docs/benchmarks.md, "Sequence-length bucketing"): the H100 pair from benchmarks/knobs_gpu.py
# (tests/fixtures/train/h100_bucketing_issue34.json), the padding from benchmarks/length_grouped.py (real
# llamafactory-cli runs on the CPU, the trainer's own counts of tokens fed and real tokens).
BUCKETED_WORDS = ("on an H100, 8B LoRA 16 x 1, samples of 100-1,000 tokens: 8.4k real tokens/s in random order, "
                  "12.6k length-grouped, 1.49x; real llamafactory-cli runs on 600 samples at 16 a step fed 1.61 "
                  "tokens per real token in random order, 1.10 grouped")
MEASURED_ONLY = "predicted neutral (no measured term in the time model): offered because it was measured here"


def knob_reasons(a: TrainConfig, b: TrainConfig, knobs: KnobAvailability | None, trainable: int | None) -> list[str]:
    """Why each knob ``b`` changes from ``a`` is offered, one sentence each."""
    knobs = knobs or KnobAvailability()
    out: list[str] = []
    if a.flash_attn == "disabled" and b.flash_attn == "sdpa":
        out.append("SDPA attention instead of eager: no seq x seq score matrix in memory, fused kernels")
    elif b.flash_attn == "fa2" and a.flash_attn != "fa2":
        build = {"CK": "the ROCm Composable Kernel build", "Triton": "the ROCm Triton build",
                 "CUDA": "the CUDA build"}.get(knobs.fa2_build, "on ROCm the CK or Triton build")
        out.append(f"FlashAttention-2 ({build}) instead of {a.flash_attn}; {MEASURED_ONLY}")
    if b.enable_liger_kernel and not a.enable_liger_kernel:
        out.append("enable_liger_kernel: fused RMSNorm/SwiGLU/RoPE and a chunked linear + cross-entropy that never "
                   "holds the full logits (measured 1.10-1.23x on an H200, 8B LoRA 16 x 1: 13.3k -> 14.6-16.4k "
                   "tokens/s; the 128k-vocabulary logits buffer is gone from memory)")
    if b.torch_compile and not a.torch_compile:
        out.append("torch_compile: compiled graphs (its first steps are slow: compile time is start-up; on an H200, "
                   "8B LoRA 16 x 1 without Liger, ~130 s to the first step, ~120 s more when the epoch's short last "
                   f"batch brings a new shape, and no gain per step over Liger eager); {MEASURED_ONLY}")
    if b.packs and not a.packs:
        out.append("packing: samples packed into full sequences, so no padding and fixed-length memory (on an "
                   "H100, 8B LoRA 16 x 1, samples of 100-1,000 tokens: 8.5k real tokens/s unpacked, 15.7k packed "
                   "counting the packs' end padding); each step then holds about cutoff / mean length as many "
                   "samples, so the loss falls faster per step and the curve is not step-for-step the same; "
                   "neat_packing keeps attention inside each sample")
    if b.group_by_length and not a.group_by_length:
        out.append("group_by_length: each batch takes samples of similar length (the HF Trainer's length-grouped "
                   f"sampler), so far less padding with the same samples per step ({BUCKETED_WORDS}); the order "
                   "changes, not what a step holds: batches come in runs of falling length (50 batches each, fewer "
                   "on an epoch under 200 batches; the longest batch first, so an out-of-memory shows at once), and "
                   "the loss per step moves with those lengths; lengths are read from every sample at start-up; "
                   + MEASURED_ONLY)
    versions = knobs.versions
    if optim_of(a, versions) != optim_of(b, versions):
        how = ("one fused kernel updates every parameter" if optim_of(b, versions) == FUSED
               else "foreach: one kernel per operation over the parameter list")
        share = (f"LoRA updates only {trainable / 1e6:.1f} M parameters, so the optimizer step is a tiny share of a "
                 "step and little can change" if trainable is not None and a.finetuning_type == "lora"
                 else "the optimizer step's share of a step decides the gain")
        out.append(f"optim {optim_of(a, versions)} -> {optim_of(b, versions)}: {how}; {share}; {MEASURED_ONLY}")
    if a.dataloader_num_workers != b.dataloader_num_workers:
        out.append(f"dataloader_num_workers {a.dataloader_num_workers} -> {b.dataloader_num_workers}: the loader runs "
                   "in the training process unless workers collate (pad) the next batches ahead of the step "
                   "(tokenising is done before training: preprocessing_num_workers); " + MEASURED_ONLY)
    if b.use_unsloth and not a.use_unsloth:
        out.append(f"use_unsloth: Unsloth's fused LoRA kernels (unsloth {versions.get('unsloth', 'installed')}, "
                   f"NVIDIA); {MEASURED_ONLY}")
    if b.use_unsloth_gc and not a.use_unsloth_gc:
        out.append("use_unsloth_gc: checkpointed activations wait in CPU memory (less GPU memory, a copy each way "
                   f"per layer); {MEASURED_ONLY}")
    if b.tunableop and not a.tunableop:
        out.append("TunableOp (ROCm, set in the launch environment): the first steps time every rocBLAS/hipBLASLt "
                   "solution of each new GEMM shape (up to 100 runs or 30 ms each) and keep the fastest; a one-time "
                   f"cost in start-up, the results kept in the run folder ({TUNABLEOP_RESULTS.replace('%d', '<GPU>')})"
                   f" and reused on resume; {MEASURED_ONLY}")
    return out


# Options LLaMA-Factory 0.9.5 exposes that the advisor never varies, and why (one line each).
NEVER_VARIED = (
    "use_v1_kernels: its kernels are Ascend NPU ones (RMSNorm, RoPE, SwiGLU) and a fused MoE; none apply to a dense "
    "model on this GPU",
    "use_dora, use_rslora, pissa_init, loraplus_lr_ratio: they change what LoRA learns (the method), not how fast a "
    "step runs: yours to choose",
    "shift_attn (LongLoRA S2-Attn): changes the attention the model is trained with: yours to choose",
    "pure_bf16: LoRA weights and AdamW states in bf16, no autocast: slower where measured (on an H100, 8B LoRA "
    "16 x 1: 0.875 s a step vs 0.809 s, 10 GiB more) and a less precise update",
)


def not_offered(config: TrainConfig, knobs: KnobAvailability, measured: list[dict[str, Any]]) -> list[str]:
    """One line per knob not proposed for ``config`` here, and why (not installed, not this platform, not measured
    yet, or never varied); nothing for a knob already in the config."""
    lines: list[str] = []
    offered = _offered(config, knobs)
    seen = {f: {m.get(f) for m in measured} for f in NEUTRAL_FIELDS}
    for f, values in offered.items():
        for v in values:
            if v not in seen[f]:
                value = "on" if v is True else f"{v} ({knobs.fa2_build or '?'} build)" if f == "flash_attn" else v
                lines.append(f"{f} {value}: predicted neutral, not yet timed on this machine (a calibration "
                             "with knobs times it)")
    if config.flash_attn != "fa2" and not knobs.fa2:
        lines.append("FlashAttention-2: flash-attn is not installed (ROCm: the CK or Triton build of "
                     "ROCm/flash-attention)")
    elif config.flash_attn != "fa2" and not (config.bf16 or config.fp16):
        lines.append("FlashAttention-2: takes only bf16/fp16 inputs and this config trains in float32")
    if not config.use_unsloth:
        if knobs.platform == "rocm":
            lines.append("use_unsloth: Unsloth's kernels are NVIDIA-only")
        elif not knobs.unsloth:
            lines.append("use_unsloth: the unsloth package is not installed (NVIDIA only)")
        elif config.finetuning_type != "lora":
            lines.append("use_unsloth: for LoRA training only")
    if not config.tunableop and knobs.platform != "rocm":
        lines.append("TunableOp: ROCm only (on CUDA every GEMM resolved to cuBLAS's Default: +0.2%, noise, on an "
                     "H200)")
    if not config.fp8:
        lines.append("fp8: never varied: FP8 matmuls trade precision (yours to choose), and their speed was never "
                     f"timed here ({FP8_MEMORY_WORDS}); LLaMA-Factory's key with transformers 5 needs bf16 off and "
                     "hipwizard's launch (the config form's fp8 row says why)")
    if not config.use_unsloth_gc and not config.gradient_checkpointing:
        lines.append("use_unsloth_gc: acts on gradient checkpointing, which is off")
    return lines + list(NEVER_VARIED)
