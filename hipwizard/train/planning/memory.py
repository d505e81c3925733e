"""Predict the peak GPU memory of one training process from the model's shape and the config.

Method (docs/memory.md has the derivation, the measurements and the errors):

- weights: parameters by module x bytes (bf16 2, fp32 4, 4-bit ~0.53, 8-bit ~1.06), divided by the world
  size under ZeRO-3 (plus the gathered working set when other ranks hold shards), gone under parameter
  offload (the working set stays);
- trainable states: LoRA/full parameters, gradients and AdamW's two moments in fp32 (16 bytes each; full
  fine-tuning under DeepSpeed: bf16 weights + bf16 grads + fp32 master and moments), partitioned by ZeRO,
  moved to the host by optimizer offload;
- activations of one micro-batch (batch x sequence tokens): per layer ``ACT_H*h + ACT_I*i`` bytes per token
  without gradient checkpointing, a ``2h`` checkpoint per layer plus one recomputed layer with it; eager
  attention adds the ``heads x seq`` score matrix; the loss adds ``LOGIT_BYTES x vocab`` per token;
- allocator slack (cached blocks the caching allocator cannot reuse), a fragmentation allowance for
  variable-length data, and the runtime context (CUDA/HIP context; NCCL and DeepSpeed buffers).

The per-token coefficients, the slack and the context were fitted to our own H200 runs (8B, LoRA,
fixed-length 830-token samples: ``tests/fixtures/train/h200_measured.json``); the fragmentation allowance to
the variable-length runs of issue 6; the rest is counted. ``estimate_memory`` returns a ``MemoryEstimate`` or,
when the model's shape is unknown, an estimate that says it cannot and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.model_shape import ModelShape, ShapeResult

GIB = 2**30

# Per-token activation bytes of one Llama layer without checkpointing, ACT_H*hidden + ACT_I*intermediate
# (bf16). Counted for frozen base weights (their inputs are not saved): 6*i for the SwiGLU (gate output,
# SiLU output, up output), ~7*h for attention (LoRA input, q/k/v after RoPE, SDPA output), ~12*h for the two
# fp32 RMSNorms; fitted together on the H200 runs as 42.9*h for Llama-3-8B (ACT_H absorbs the rest).
ACT_H = 22.0
ACT_I = 6.0
# Per vocab entry per token: bf16 logits (2), their fp32 upcast in the loss (4), its gradient (4) and the
# loss's small temporaries; fitted 10.6 on the H200 runs.
LOGIT_BYTES = 10.6
WORKSPACE_GIB = 0.17  # fitted: tensor memory that does not scale with tokens (BLAS workspace, RoPE tables)
CONTEXT_GIB = 0.75  # measured: device memory in use minus torch's reserved, no DeepSpeed (0.74-0.75 GiB)
DEEPSPEED_CONTEXT_GIB = 0.93  # measured: the same with DeepSpeed (1.67-1.71 GiB): NCCL/RCCL and DS buffers
# Caching-allocator slack (reserved - allocated) per vocab entry per token of the micro-batch: measured
# 3.19-3.23 without DeepSpeed at 4, 8 and 16 sequences (about 0.8 of one fp32 copy of the logits, the
# largest blocks the loss frees and re-requests); 2.5-4.6 with DeepSpeed, one fit for all.
SLACK_LOGIT_BYTES = 3.2
# Variable-length batches: every micro-batch is padded to its own longest sample, so the allocator caches
# blocks of many sizes and cannot reuse them all. Fitted (least largest error) to issue 6's five runs on a
# variable-length dataset: without DeepSpeed, checkpointing, 4 x 4, reserved - allocated was 6.0 GiB there vs
# 1.3 GiB with fixed lengths; the extra did not grow with the micro-batch (+1.4 GiB at 8 x 2, +2.5 at 16 x 1).
FRAGMENTATION_GIB = 2.65
# ZeRO-3 keeps at most stage3_max_live_parameters (hipwizard's DeepSpeed JSON: 1e9) gathered, and the
# vocabulary matrix of the layer in use on top: 2.95 GiB measured with parameter offload, 2.84 counted.
ZERO3_MAX_LIVE_PARAMS = 1e9
# Liger (enable_liger_kernel): its fused linear + cross-entropy never materialises the logits (it works in
# chunks), so the logits part and the slack it causes go; its RMSNorm saves the bf16 input and a per-row
# rstd instead of fp32 copies, its SwiGLU recomputes SiLU. Assumed from the kernels' design, not yet fitted:
# ``hipwizard train calibrate`` measures it.
LIGER_LOGIT_CHUNK_GIB = 0.5  # assumed: one chunk of logits and its gradient in flight
LIGER_ACT_H = 14.0  # assumed: ACT_H less the two fp32 RMSNorm copies (2 x 4h)
LIGER_ACT_I = 4.0  # assumed: gate and up outputs, the SiLU output recomputed

Lengths = Literal["variable", "fixed"]
LENGTHS: tuple[str, ...] = ("variable", "fixed")
DEFAULT_LENGTHS: Lengths = "variable"  # what SFT data usually is (no packing); docs/memory.md says why


@dataclass(frozen=True)
class MemoryPart:
    name: str
    gib: float
    note: str = ""


@dataclass
class MemoryEstimate:
    """Peak device memory per GPU, its parts, and how it compares with the device."""

    parts: list[MemoryPart] = field(default_factory=list)
    device_vram_gib: float | None = None
    host_gib: float = 0.0  # what offload moves to CPU memory
    reason: str = ""  # set when there is no estimate
    notes: list[str] = field(default_factory=list)
    seq_len: int = 0
    world_size: int = 1
    lengths: str = DEFAULT_LENGTHS

    @property
    def available(self) -> bool:
        return not self.reason

    @property
    def total_gib(self) -> float:
        return sum(p.gib for p in self.parts)

    @property
    def tensor_gib(self) -> float:
        """The parts torch allocates (what ``max_memory_allocated`` / RECORD_VRAM's vram_allocated report)."""
        return sum(p.gib for p in self.parts if p.name not in RUNTIME_PARTS)

    @property
    def margin_gib(self) -> float | None:
        if self.device_vram_gib is None or not self.available:
            return None
        return self.device_vram_gib - self.total_gib

    @property
    def fits(self) -> bool | None:
        """True when the peak stays under 95% of the device (headroom for other processes and drift)."""
        if self.device_vram_gib is None or not self.available:
            return None
        return self.total_gib <= 0.95 * self.device_vram_gib

    def to_dict(self) -> dict:
        return {
            "available": self.available, "reason": self.reason,
            "total_gib": round(self.total_gib, 2), "device_vram_gib": self.device_vram_gib,
            "margin_gib": None if self.margin_gib is None else round(self.margin_gib, 2), "fits": self.fits,
            "host_gib": round(self.host_gib, 2), "seq_len": self.seq_len, "world_size": self.world_size,
            "lengths": self.lengths,
            "parts": [{"name": p.name, "gib": round(p.gib, 3), "note": p.note} for p in self.parts],
            "notes": self.notes,
        }


RUNTIME_PARTS = frozenset({"allocator slack", "length variability", "runtime context", "calibration"})


def _weight_bytes(shape: ModelShape, config: TrainConfig, act_bytes: int) -> float:
    params = shape.params_by_module()
    linear = params["attention"] + params["mlp"]
    other = shape.total_params - linear
    if config.quantization_bit == 4:
        return linear * 0.53 + other * act_bytes
    if config.quantization_bit == 8:
        return linear * 1.06 + other * act_bytes
    return shape.total_params * act_bytes


def trainable_params(shape: ModelShape, config: TrainConfig) -> int:
    if config.finetuning_type == "lora":
        return shape.lora_params(config.lora_targets, config.lora_rank)
    if config.finetuning_type == "freeze":
        return 2 * shape.layer_params  # LLaMA-Factory's default: the last 2 layers train
    return shape.total_params


def activation_bytes_per_token(shape: ModelShape, config: TrainConfig, seq_len: int) -> float:
    """Bytes held for backward per token of a micro-batch (all layers + the loss)."""
    h, i, layers = shape.hidden_size, shape.intermediate_size, shape.num_layers
    scale = 1.0 if (config.bf16 or config.fp16) else 2.0  # fp32 training doubles the activations
    liger = config.enable_liger_kernel
    layer = (LIGER_ACT_H * h + LIGER_ACT_I * i) if liger else (ACT_H * h + ACT_I * i)
    if config.flash_attn == "disabled":
        layer += 6 * shape.num_heads * seq_len  # softmax output (fp32) + its bf16 copy, per query token
    if config.finetuning_type == "lora" and config.lora_dropout > 0:
        shapes = shape.linear_shapes
        names = list(shapes) if config.lora_targets == ["all"] else [t for t in config.lora_targets if t in shapes]
        layer += sum(3 * shapes[n][0] for n in names)  # dropout output (2 B) + mask (1 B) per input feature
    if config.finetuning_type == "full":
        layer += 4 * h + 2 * i  # trainable o_proj, gate/up and down_proj also save their inputs (bf16)
    if config.gradient_checkpointing:
        per_token = layers * 2 * h + layer  # one checkpoint per layer + one layer recomputed
    else:
        per_token = layers * layer
    return per_token * scale + (0.0 if liger else LOGIT_BYTES * shape.vocab_size)


def zero3_working_set(shape: ModelShape, act_bytes: int) -> float:
    """Bytes of gathered parameters ZeRO-3 holds at once (live-parameter cap + the vocabulary matrix)."""
    live = min(shape.total_params, ZERO3_MAX_LIVE_PARAMS) + shape.vocab_size * shape.hidden_size
    return min(live, shape.total_params) * act_bytes


def estimate_memory(
    config: TrainConfig, shape: ShapeResult | ModelShape | None, *, world_size: int = 1,
    seq_len: int | None = None, device_vram_gib: float | None = None, lengths: str | None = None,
) -> MemoryEstimate:
    """Peak memory per GPU for ``config`` on ``world_size`` GPUs.

    ``seq_len`` is the padded length of the longest micro-batch (default ``cutoff_len``: the worst case).
    ``lengths`` is ``"variable"`` (default: samples of different lengths, each micro-batch padded to its
    longest, which fragments the allocator) or ``"fixed"`` (packed or equal-length samples).
    """
    lengths = lengths or ("fixed" if config.packs else DEFAULT_LENGTHS)
    if lengths not in LENGTHS:
        raise ValueError(f"lengths must be one of {', '.join(LENGTHS)}, not {lengths!r}")
    result = MemoryEstimate(device_vram_gib=device_vram_gib, world_size=max(1, world_size), lengths=lengths)
    if isinstance(shape, ShapeResult):
        if shape.shape is None:
            result.reason = f"cannot estimate memory: {shape.reason}"
            return result
        shape = shape.shape
    if shape is None:
        result.reason = "cannot estimate memory: the model's shape is unknown"
        return result
    ws = result.world_size
    seq = max(1, min(seq_len or config.cutoff_len, config.cutoff_len))
    result.seq_len = seq
    ds = config.uses_deepspeed
    stage = config.zero_stage or 0
    act_bytes = 2 if (config.bf16 or config.fp16) else 4
    parts = result.parts

    # --- weights ----------------------------------------------------------------------------
    full = config.finetuning_type == "full"
    weight_dtype = 4 if (full and not ds) else act_bytes  # LLaMA-Factory upcasts trainable weights to fp32
    weights = _weight_bytes(shape, config, weight_dtype)
    if stage == 3 and config.offload_param:
        result.host_gib += weights / GIB
        parts.append(MemoryPart("weights (working set)", zero3_working_set(shape, act_bytes) / GIB,
                                "ZeRO-3 param offload: weights in host RAM, gathered layers on the GPU"))
    elif stage == 3:
        gathered = 0.0 if ws == 1 else zero3_working_set(shape, act_bytes)
        parts.append(MemoryPart("weights", (weights / ws + gathered) / GIB,
                                f"{shape.total_params / 1e9:.2f} B params sharded over {ws} GPU(s)"
                                + (" + gathered layers" if gathered else "")))
    else:
        parts.append(MemoryPart("weights", weights / GIB, f"{shape.total_params / 1e9:.2f} B params x {weight_dtype} B"
                                + (f", {config.quantization_bit}-bit base" if config.quantization_bit else "")))

    # --- trainable states -------------------------------------------------------------------
    trainable = trainable_params(shape, config)
    if full and ds:
        grads, optim = 2.0 * trainable, 12.0 * trainable  # bf16 grads; fp32 master + 2 moments
    elif full:
        grads, optim = 4.0 * trainable, 8.0 * trainable  # fp32 weights already counted above
    else:
        grads, optim = 4.0 * trainable, 12.0 * trainable  # fp32 adapter weights + 2 moments, fp32 grads
    if stage >= 2:
        grads /= ws
    if ds:
        optim /= ws
    if config.offload_optimizer:
        result.host_gib += optim / GIB
        optim = 0.0
    parts.append(MemoryPart("gradients", grads / GIB, f"{trainable / 1e6:.1f} M trainable params"))
    parts.append(MemoryPart("optimizer states", optim / GIB,
                            "AdamW in host RAM (offload)" if config.offload_optimizer else "AdamW, fp32"))

    # --- activations ------------------------------------------------------------------------
    tokens = config.per_device_train_batch_size * seq
    per_token = activation_bytes_per_token(shape, config, seq)
    liger = config.enable_liger_kernel
    logits = LIGER_LOGIT_CHUNK_GIB * GIB if liger else LOGIT_BYTES * shape.vocab_size * tokens
    activations = per_token * tokens - (0.0 if liger else logits) + WORKSPACE_GIB * GIB
    parts.append(MemoryPart("activations", activations / GIB,
                            f"{config.per_device_train_batch_size} x {seq} tokens, gradient checkpointing "
                            + ("on" if config.gradient_checkpointing else "off")
                            + (", eager attention (seq^2 scores)" if config.flash_attn == "disabled" else "")))
    parts.append(MemoryPart("logits and loss", logits / GIB, "Liger fused linear cross-entropy: in chunks (assumed)"
                            if liger else f"vocab {shape.vocab_size:,}"))

    # --- runtime ----------------------------------------------------------------------------
    slack = 0.0 if liger else SLACK_LOGIT_BYTES * shape.vocab_size * tokens
    parts.append(MemoryPart("allocator slack", slack / GIB, "cached blocks the allocator cannot reuse"))
    if lengths == "variable":
        parts.append(MemoryPart("length variability", FRAGMENTATION_GIB,
                                "variable-length batches fragment the cache (--lengths fixed if packed)"))
    else:
        parts.append(MemoryPart("length variability", 0.0, "fixed-length (packed) data: no allowance"))
    context = CONTEXT_GIB + (DEEPSPEED_CONTEXT_GIB if ds else 0.0)
    parts.append(MemoryPart("runtime context", context, "HIP/CUDA context" + (", RCCL/NCCL, DeepSpeed" if ds else "")))

    if seq_len is None:
        result.notes.append(f"sequences taken at cutoff_len ({seq}); shorter data peaks lower")
    if result.host_gib:
        result.notes.append(f"offload keeps {result.host_gib:.1f} GiB in host RAM per process")
    return result
