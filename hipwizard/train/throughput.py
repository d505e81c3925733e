"""Expected training throughput (tokens/s per run) of a config, calibrated on one H200.

The model: compute per token (forward 2N, backward 2N, weight gradients 2N for full fine-tuning, the
forward again under gradient checkpointing) against an effective peak measured with the 8B LoRA recipe;
a saturation curve for small micro-batches (the GPU is not full at 4 x 830 tokens); and factors for what
DeepSpeed and offload cost. Factors marked *measured* come from issue 6's runs; the others are stated
assumptions, shown as such. Absolute numbers are H200-calibrated; the advisor ranks by the ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipwizard.train.config import TrainConfig
from hipwizard.train.model_shape import ModelShape

REF_PARAMS = 8.03e9
# H200, 8B LoRA (q_proj,v_proj), no DeepSpeed, no checkpointing, at saturation (fit of 8,698 / 12,125 /
# 12,467 tokens/s at 4 / 8 / 16 sequences of 830 tokens).
REF_PEAK_TOKENS_S = 12_600.0
SATURATION_TOKENS = 2641.0  # micro-batch tokens at which the GPU reaches half its peak
SATURATION_POWER = 3.5
ZERO3_FACTOR = 0.482  # measured: ZeRO-3 on one H200, 2,792 vs 5,797 tokens/s (model) for the same run
ZERO2_FACTOR = 0.90  # assumed: gradient reduce-scatter and bucket copies
ZERO0_FACTOR = 0.97  # assumed: DeepSpeed engine overhead alone
OFFLOAD_OPTIMIZER_FACTOR = {"lora": 0.85, "full": 0.35, "freeze": 0.6}  # assumed: CPU AdamW + PCIe copies
OFFLOAD_PARAM_FACTOR = 0.25  # assumed: every layer crosses PCIe twice per step
EAGER_ATTENTION_FACTOR = 0.85  # assumed: unfused softmax(QK^T)V
DATA_PARALLEL_EFFICIENCY = 0.90  # assumed: gradient all-reduce per GPU added


@dataclass(frozen=True)
class Throughput:
    tokens_per_s: float
    factors: tuple[tuple[str, float], ...]  # (why, multiplier) — how the number was built


def saturation(tokens_per_micro_batch: float) -> float:
    """Share of peak reached at this micro-batch size (Hill curve fitted to the H200 runs)."""
    x = (max(tokens_per_micro_batch, 1.0) / SATURATION_TOKENS) ** SATURATION_POWER
    return x / (1.0 + x)


def compute_multiple(config: TrainConfig) -> float:
    """Compute per token in units of the model's parameter count (LoRA without checkpointing = 4)."""
    mult = 4.0 + (2.0 if config.finetuning_type == "full" else 0.0)
    if config.gradient_checkpointing:
        mult += 2.0
    return mult


def estimate_throughput(config: TrainConfig, shape: ModelShape, *, world_size: int = 1, seq_len: int) -> Throughput:
    """Tokens/s of the whole run (all GPUs) for ``config`` with sequences of ``seq_len``."""
    factors: list[tuple[str, float]] = []
    base = REF_PEAK_TOKENS_S * (REF_PARAMS * 4.0) / (shape.total_params * compute_multiple(config))
    sat = saturation(config.per_device_train_batch_size * seq_len)
    factors.append((f"micro-batch {config.per_device_train_batch_size} x {seq_len} tokens fills {sat:.0%} of the GPU", sat))
    if config.gradient_checkpointing:
        factors.append(("gradient checkpointing recomputes the forward pass", (compute_multiple(config) - 2) / compute_multiple(config)))
    stage = config.zero_stage
    if stage == 3:
        factors.append(("ZeRO-3 gathers and frees every layer each pass (measured on one H200)", ZERO3_FACTOR))
    elif stage == 2:
        factors.append(("ZeRO-2 gradient partitioning (assumed)", ZERO2_FACTOR))
    elif stage == 0:
        factors.append(("DeepSpeed engine without ZeRO (assumed)", ZERO0_FACTOR))
    if config.offload_optimizer:
        factors.append(("optimizer step on the CPU (assumed)", OFFLOAD_OPTIMIZER_FACTOR[config.finetuning_type]))
    if config.offload_param:
        factors.append(("weights stream from host RAM (assumed)", OFFLOAD_PARAM_FACTOR))
    if config.flash_attn == "disabled":
        factors.append(("eager attention (assumed)", EAGER_ATTENTION_FACTOR))
    if world_size > 1:
        factors.append((f"{world_size} GPUs, data parallel (assumed {DATA_PARALLEL_EFFICIENCY:.0%} each)",
                        world_size * DATA_PARALLEL_EFFICIENCY))
    # the checkpointing factor is already inside compute_multiple: show it, do not apply it twice
    value = base * sat
    for why, f in factors[1:]:
        if not why.startswith("gradient checkpointing"):
            value *= f
    return Throughput(value, tuple(factors))
