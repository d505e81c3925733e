"""Expected steady-state training throughput (tokens/s per run) of a config, calibrated on one H200.

A time model of one optimizer step on one GPU, built from terms with stated sources:

- tokens: each token costs compute in proportion to parameters x a compute multiple (forward 2N + input
  gradients 2N; + 2N weight gradients for full fine-tuning), at the rate measured for 8B LoRA on the H200;
  gradient checkpointing multiplies it by the measured recompute factor; eager attention by an assumed one;
- per micro-batch: a fixed cost (kernel launches, Python, the loss) measured from 4 x 4 / 8 x 2 / 16 x 1 —
  why fewer, larger micro-batches are faster for the same effective batch;
- ZeRO-3: per forward/backward pass, every parameter is gathered and released (on one GPU this is pure
  overhead), measured; parameter offload streams them from host RAM instead, measured;
- optimizer offload: AdamW on the CPU per step (assumed, per trainable parameter);
- several GPUs: an assumed data-parallel efficiency.

*Measured* terms come from our steady-state H200 runs (``tests/fixtures/train/h200_measured.json``, step
arrival clock, warm-up excluded); the others are assumptions and say so. Absolute numbers are
H200-calibrated; the advisor ranks by the ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.memory import trainable_params
from hipwizard.train.planning.model_shape import ModelShape

REF_PARAMS = 8.03e9
# Least-squares fit of step time = micro-batches x MICRO_BATCH_OVERHEAD_S + tokens / REF_TOKENS_S to the
# steady rates without DeepSpeed or checkpointing: 11,979 / 12,375 / 13,276 tokens/s at 4 x 4 / 8 x 2 / 16 x 1
# (830-token sequences, 8B LoRA q_proj,v_proj); residuals within 2.3%.
REF_TOKENS_S = 13_515.0
MICRO_BATCH_OVERHEAD_S = 0.0335
# Measured: checkpointing on, 4 x 4: 8,643 vs 11,979 tokens/s -> token time x 1.43 (the FLOP count says 1.5
# for LoRA: the recomputed forward is the cheaper pass). For full fine-tuning the recompute is a smaller share.
CHECKPOINT_TOKEN_FACTOR = 1.43
# Measured: ZeRO-3 on one GPU, checkpointing on (3 passes), 4 x 4: 4,603 vs 8,643 tokens/s -> +0.337 s per
# micro-batch = 0.112 s per pass for 8.03 B parameters.
ZERO3_S_PER_PARAM_PASS = 0.112 / REF_PARAMS
# Measured: ZeRO-3 with optimizer + parameter offload, same run: 2,911 tokens/s -> +0.419 s per micro-batch
# on top of ZeRO-3 (LoRA: the optimizer part is a few million parameters, so this is the parameter stream).
OFFLOAD_PARAM_S_PER_PARAM_PASS = 0.140 / REF_PARAMS
OFFLOAD_OPTIMIZER_S_PER_PARAM = 1.5e-9  # assumed: CPU AdamW plus the gradient/weight copies, per step
ZERO2_FACTOR = 1.0  # measured 1.03x (8,878 vs 8,643 tokens/s) at ckpt on, 4 x 4: within run noise, taken as 1
# Measured on one H200 (8B LoRA, 16 x 1, no checkpointing, liger-kernel 0.8.5): 13.3k -> 14.6-16.4k tokens/s
# with enable_liger_kernel (1.10-1.23x; elapsed_time's 1 s resolution limits precision): the midpoint.
LIGER_TOKEN_FACTOR = 1.0 / 1.16
TORCH_COMPILE_FACTOR = 1.0  # assumed: not measured yet (calibrate measures it); compile time is start-up
FA2_FACTOR = 1.0  # assumed: SDPA already dispatches to flash kernels on these GPUs
EAGER_ATTENTION_FACTOR = 1.0 / 0.85  # assumed: unfused softmax(QK^T)V costs token time
DATA_PARALLEL_EFFICIENCY = 0.90  # assumed: gradient all-reduce per GPU added


@dataclass(frozen=True)
class Throughput:
    tokens_per_s: float
    step_seconds: float  # one optimizer step on one GPU
    terms: tuple[tuple[str, float], ...]  # (why, seconds per optimizer step) — how the number was built


def compute_multiple(config: TrainConfig) -> float:
    """Compute per token in units of the model's parameter count, without recomputation (LoRA = 4)."""
    return 4.0 + (2.0 if config.finetuning_type == "full" else 0.0)


def checkpoint_factor(config: TrainConfig) -> float:
    """Token-time multiplier of gradient checkpointing: measured for LoRA, scaled by the recompute's share."""
    if not config.gradient_checkpointing:
        return 1.0
    return 1.0 + (CHECKPOINT_TOKEN_FACTOR - 1.0) * 4.0 / compute_multiple(config)


def estimate_throughput(config: TrainConfig, shape: ModelShape, *, world_size: int = 1, seq_len: int) -> Throughput:
    """Steady-state tokens/s of the whole run (all GPUs) for ``config`` with sequences of ``seq_len``."""
    micro = config.per_device_train_batch_size * seq_len
    accum = config.gradient_accumulation_steps
    params = shape.total_params
    token_s = (params * compute_multiple(config)) / (REF_PARAMS * 4.0) / REF_TOKENS_S
    terms: list[tuple[str, float]] = []
    tokens_time = accum * micro * token_s
    terms.append((f"{accum} x {micro:,} tokens of compute ({params / 1e9:.2f} B params, measured rate)", tokens_time))
    if config.gradient_checkpointing:
        terms.append(("gradient checkpointing recomputes the forward pass (measured)",
                      tokens_time * (checkpoint_factor(config) - 1.0)))
    if config.flash_attn == "disabled":
        terms.append(("eager attention (assumed)", tokens_time * (EAGER_ATTENTION_FACTOR - 1.0)))
    if config.enable_liger_kernel:
        terms.append(("Liger fused kernels (measured 1.10-1.23x on an H200)", tokens_time * (LIGER_TOKEN_FACTOR - 1.0)))
    if config.torch_compile and TORCH_COMPILE_FACTOR != 1.0:
        terms.append(("torch.compile", tokens_time * (TORCH_COMPILE_FACTOR - 1.0)))
    terms.append((f"{accum} micro-batch(es) x fixed launch/loss cost (measured)", accum * MICRO_BATCH_OVERHEAD_S))
    passes = 3 if config.gradient_checkpointing else 2
    if config.zero_stage == 3:
        terms.append((f"ZeRO-3 gathers and frees every layer, {passes} passes per micro-batch (measured)",
                      accum * passes * params * ZERO3_S_PER_PARAM_PASS))
        if config.offload_param:
            terms.append(("weights stream from host RAM each pass (measured)",
                          accum * passes * params * OFFLOAD_PARAM_S_PER_PARAM_PASS))
    if config.offload_optimizer:

        terms.append(("optimizer step on the CPU (assumed)",
                      trainable_params(shape, config) * OFFLOAD_OPTIMIZER_S_PER_PARAM))
    step = sum(t for _, t in terms)
    if config.zero_stage == 2:
        step /= ZERO2_FACTOR
    rate = accum * micro / step
    if world_size > 1:
        rate *= world_size * DATA_PARALLEL_EFFICIENCY
    return Throughput(rate, step, tuple(terms))
