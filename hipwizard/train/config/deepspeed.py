"""DeepSpeed JSON for ZeRO 0/2/3 with or without CPU offload, as LLaMA-Factory's examples write it.

Values the HF Trainer fills in from the training arguments (batch sizes, accumulation, clipping,
fp16/bf16, ZeRO-3 bucket sizes) are ``"auto"``, so the YAML stays the one place they are set.
``read_zero_settings`` goes the other way: which stage and offloads an existing JSON asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ZeroStage = Literal[0, 2, 3]


def zero_stage(n: int) -> ZeroStage:
    """ZeRO stage ``n`` as planned here (stage 1 runs as 2); ValueError for a stage DeepSpeed does not have."""
    n = 2 if n == 1 else n
    if n == 0:
        return 0
    if n == 2:
        return 2
    if n == 3:
        return 3
    raise ValueError(f"unknown ZeRO stage {n}")


@dataclass(frozen=True)
class ZeroSettings:
    stage: ZeroStage
    offload_optimizer: bool = False
    offload_param: bool = False

    def __post_init__(self) -> None:
        if self.stage not in (0, 2, 3):
            raise ValueError(f"ZeRO stage must be 0, 2 or 3, not {self.stage}")
        if self.offload_optimizer and self.stage not in (2, 3):
            raise ValueError("optimizer offload needs ZeRO-2 or ZeRO-3")
        if self.offload_param and self.stage != 3:
            raise ValueError("parameter offload needs ZeRO-3")

    @property
    def label(self) -> str:
        parts = [f"ZeRO-{self.stage}"]
        if self.offload_optimizer:
            parts.append("optimizer offload")
        if self.offload_param:
            parts.append("param offload")
        return " + ".join(parts)


def _offload() -> dict[str, Any]:
    return {"device": "cpu", "pin_memory": True}


def build_deepspeed_config(settings: ZeroSettings) -> dict[str, Any]:
    """The DeepSpeed JSON (as a dict) for ``settings``."""
    zero: dict[str, Any] = {"stage": settings.stage}
    if settings.offload_optimizer:
        zero["offload_optimizer"] = _offload()
    if settings.offload_param:
        zero["offload_param"] = _offload()
    if settings.stage == 3:
        zero.update({
            "overlap_comm": False,
            "contiguous_gradients": True,
            "sub_group_size": 1e9,
            "reduce_bucket_size": "auto",
            "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto",
            "stage3_max_live_parameters": 1e9,
            "stage3_max_reuse_distance": 1e9,
            # So the saved checkpoint is a normal HF model, not shards only DeepSpeed can read.
            "stage3_gather_16bit_weights_on_model_save": True,
        })
    else:
        zero.update({
            "allgather_partitions": True,
            "allgather_bucket_size": 5e8,
            "overlap_comm": False,
            "reduce_scatter": True,
            "reduce_bucket_size": 5e8,
            "contiguous_gradients": True,
            "round_robin_gradients": True,
        })
    return {
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "zero_allow_untested_optimizer": True,
        "fp16": {
            "enabled": "auto",
            "loss_scale": 0,
            "loss_scale_window": 1000,
            "initial_scale_power": 16,
            "hysteresis": 2,
            "min_loss_scale": 1,
        },
        "bf16": {"enabled": "auto"},
        "zero_optimization": zero,
    }


def read_zero_settings(ds: Any) -> ZeroSettings:
    """Stage and offloads of an existing DeepSpeed JSON; ZeRO-1 is read as 2 (same memory for LoRA)."""
    if not isinstance(ds, dict):
        raise ValueError("a DeepSpeed config is a JSON object")
    zero = ds.get("zero_optimization") or {}
    if not isinstance(zero, dict):
        raise ValueError("zero_optimization must be an object")
    try:
        stage = int(zero.get("stage", 0))
    except (TypeError, ValueError):
        raise ValueError(f"zero_optimization.stage is not a number: {zero.get('stage')!r}") from None
    stage = zero_stage(stage)

    def offloaded(key: str) -> bool:
        part = zero.get(key)
        return isinstance(part, dict) and str(part.get("device", "none")).lower() in ("cpu", "nvme")

    return ZeroSettings(stage, offloaded("offload_optimizer") and stage in (2, 3), offloaded("offload_param") and stage == 3)
