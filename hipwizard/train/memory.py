"""Predict the peak GPU memory of one training process from the model's shape and the config.

Method (docs/memory.md has the derivation and the calibration):

- weights: parameters by module x bytes (bf16 2, fp32 4, 4-bit ~0.53, 8-bit ~1.06), divided by the world
  size under ZeRO-3, gone under parameter offload (a prefetch working set of ~2 layers stays);
- trainable states: LoRA/full parameters, gradients and AdamW's two moments in fp32 (16 bytes each; full
  fine-tuning under DeepSpeed: bf16 weights + bf16 grads + fp32 master and moments), partitioned by ZeRO,
  moved to the host by optimizer offload;
- activations of one micro-batch (batch x sequence tokens): per layer ``ACT_H*h + ACT_I*i`` bytes per token
  without gradient checkpointing, a ``2h`` checkpoint per layer plus one recomputed layer with it; eager
  attention adds the ``heads x seq`` score matrix; the loss adds ``LOGIT_BYTES x vocab`` per token;
- allocator slack (blocks the caching allocator holds but cannot reuse) and the runtime context.

The per-token coefficients and the slack were fitted to the H200 runs of issue 6 (8B, LoRA, 830-token
sequences); the rest is counted. ``estimate_memory`` returns a ``MemoryEstimate`` or, when the model's
shape is unknown, an estimate that says it cannot and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hipwizard.train.config import TrainConfig
from hipwizard.train.model_shape import ModelShape, ShapeResult

GIB = 2**30

# Per-token activation bytes of one Llama layer without checkpointing, as ACT_H*hidden + ACT_I*intermediate
# (bf16). Fitted: 8B LoRA runs give ~34*hidden per layer, close to the 34*h of Korthikanti et al. for
# attention without the score matrix.
ACT_H = 11.0
ACT_I = 6.5
LOGIT_BYTES = 10.0  # per vocab entry per token: bf16 logits, the fp32 upcast in the loss and its gradient
CONTEXT_GIB = 1.4  # CUDA/HIP context, BLAS workspaces: device memory no tensor accounts for
DEEPSPEED_CONTEXT_GIB = 0.9  # NCCL/RCCL communicator buffers and DeepSpeed's own workspaces
# Caching-allocator slack: fixed share of weight bytes + share of the transient (activation) bytes.
SLACK_WEIGHTS = {False: 0.40, True: 0.0}  # keyed by "DeepSpeed on"
SLACK_TRANSIENT = {False: 0.20, True: 0.17}


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

    @property
    def available(self) -> bool:
        return not self.reason

    @property
    def total_gib(self) -> float:
        return sum(p.gib for p in self.parts)

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
            "parts": [{"name": p.name, "gib": round(p.gib, 3), "note": p.note} for p in self.parts],
            "notes": self.notes,
        }


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
    layer = ACT_H * h + ACT_I * i
    if config.flash_attn == "disabled":
        layer += 6 * shape.num_heads * seq_len  # softmax output (fp32) + its bf16 copy, per query token
    if config.finetuning_type == "lora" and config.lora_dropout > 0:
        shapes = shape.linear_shapes
        names = list(shapes) if config.lora_targets == ["all"] else [t for t in config.lora_targets if t in shapes]
        layer += sum(3 * shapes[n][0] for n in names)  # dropout output (2 B) + mask (1 B) per input feature
    if config.gradient_checkpointing:
        per_token = layers * 2 * h + layer  # one checkpoint per layer + one layer recomputed
    else:
        per_token = layers * layer
    return per_token * scale + LOGIT_BYTES * shape.vocab_size


def estimate_memory(
    config: TrainConfig, shape: ShapeResult | ModelShape | None, *, world_size: int = 1,
    seq_len: int | None = None, device_vram_gib: float | None = None,
) -> MemoryEstimate:
    """Peak memory per GPU for ``config`` on ``world_size`` GPUs.

    ``seq_len`` is the padded length of the longest micro-batch (default ``cutoff_len``: the worst case).
    """
    result = MemoryEstimate(device_vram_gib=device_vram_gib, world_size=max(1, world_size))
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
        working = max(2 * shape.layer_params, shape.vocab_size * shape.hidden_size) * act_bytes
        result.host_gib += weights / GIB
        parts.append(MemoryPart("weights (working set)", working / GIB, "ZeRO-3 param offload: weights in host RAM"))
    elif stage == 3:
        gathered = 0.0 if ws == 1 else max(2 * shape.layer_params, shape.vocab_size * shape.hidden_size) * act_bytes
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
    logits = LOGIT_BYTES * shape.vocab_size * tokens
    activations = per_token * tokens - logits
    parts.append(MemoryPart("activations", activations / GIB,
                            f"{config.per_device_train_batch_size} x {seq} tokens, gradient checkpointing "
                            + ("on" if config.gradient_checkpointing else "off")
                            + (", eager attention (seq^2 scores)" if config.flash_attn == "disabled" else "")))
    parts.append(MemoryPart("logits and loss", logits / GIB, f"vocab {shape.vocab_size:,}"))

    # --- runtime ----------------------------------------------------------------------------
    slack = SLACK_WEIGHTS[ds] * weights / (ws if stage == 3 else 1) + SLACK_TRANSIENT[ds] * per_token * tokens
    parts.append(MemoryPart("allocator slack", slack / GIB, "cached blocks the allocator cannot reuse"))
    context = CONTEXT_GIB + (DEEPSPEED_CONTEXT_GIB if ds else 0.0)
    parts.append(MemoryPart("runtime context", context, "HIP/CUDA context, BLAS" + (", RCCL/NCCL" if ds else "")))

    if seq_len is None:
        result.notes.append(f"sequences taken at cutoff_len ({seq}); shorter data peaks lower")
    if result.host_gib:
        result.notes.append(f"offload keeps {result.host_gib:.1f} GiB in host RAM per process")
    return result
