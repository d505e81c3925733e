"""Model FLOPs utilisation (MFU) against a measured ceiling and against the spec sheet.

``flops_per_token(config, shape)``: the model FLOPs of one trained token — forward 2N plus input
gradients 2N (LoRA, freeze: the frozen weights get no weight gradient), plus weight gradients 2N for full
fine-tuning; gradient checkpointing's recompute is not model work, so it is not counted (MFU, not hardware
utilisation); attention's seq-dependent FLOPs are left out (under 10% at 1k tokens for 8B shapes).

``Ceiling``: the bf16 GEMM rate measured on this GPU (``gemm_bench``), stored by ``hipwizard train bench``
or ``train calibrate`` in the workspace. Vendors' dense bf16 numbers (``SPEC_BF16_TFLOPS``) are not
reachable: AMD measured ~708 of the MI300X's 1,307 TFLOP/s on a large GEMM, so utilisation is shown
against both.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.model_shape import ModelShape

# Dense bf16 tensor rate, TFLOP/s (no sparsity), from the vendors' data sheets.
SPEC_BF16_TFLOPS: dict[str, float] = {
    "mi355x": 2300.0, "mi350x": 2300.0, "mi325x": 1307.4, "mi300x": 1307.4, "mi300a": 980.6,
    "mi250x": 383.0, "mi250": 362.1, "mi210": 181.0, "h200": 989.4, "h100": 989.4, "h800": 989.4,
    "gh200": 989.4, "a100": 312.0, "a800": 312.0, "l40s": 362.0,
}


def spec_tflops(gpu_name: str) -> float | None:
    """The data-sheet dense bf16 rate of a GPU named like "NVIDIA H200" or "AMD Instinct MI300X"."""
    words = re.sub(r"[^a-z0-9]+", " ", (gpu_name or "").lower()).split()
    for key in sorted(SPEC_BF16_TFLOPS, key=len, reverse=True):
        if key in words or any(w.startswith(key) for w in words):
            return SPEC_BF16_TFLOPS[key]
    return None


def flops_per_token(config: TrainConfig, shape: ModelShape) -> float:
    multiple = 6.0 if config.finetuning_type == "full" else 4.0
    return multiple * shape.total_params


@dataclass(frozen=True)
class Ceiling:
    """A measured bf16 GEMM rate (TFLOP/s) on one GPU."""

    tflops: float
    gpu: str
    n: int  # square GEMM size that gave the best rate
    torch: str = ""
    measured: str = ""  # ISO time
    machine: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Ceiling | None":
        try:
            return cls(float(d["tflops"]), str(d.get("gpu", "")), int(d.get("n", 0)), str(d.get("torch", "")),
                       str(d.get("measured", "")), str(d.get("machine", "")))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Utilisation:
    tflops: float  # model TFLOP/s achieved
    of_ceiling: float | None  # fraction of the measured GEMM rate
    of_spec: float | None  # fraction of the data sheet

    def line(self) -> str:
        parts = [f"{self.tflops:.0f} TFLOP/s"]
        if self.of_ceiling is not None:
            parts.append(f"MFU {self.of_ceiling:.0%} of measured GEMM")
        if self.of_spec is not None:
            parts.append(f"{self.of_spec:.0%} of spec")
        return ", ".join(parts)


def utilisation(tokens_per_s: float, config: TrainConfig, shape: ModelShape, *, gpus: int = 1,
                ceiling: Ceiling | None = None, gpu_name: str = "") -> Utilisation:
    """Model TFLOP/s per GPU for ``tokens_per_s`` (the whole run), against the ceiling and the spec."""
    tflops = tokens_per_s * flops_per_token(config, shape) / max(1, gpus) / 1e12
    spec = spec_tflops(gpu_name or (ceiling.gpu if ceiling else ""))
    return Utilisation(tflops, tflops / ceiling.tflops if ceiling and ceiling.tflops > 0 else None,
                       tflops / spec if spec else None)
