"""What kind of machine the checks are looking at, decided once from the EnvReport."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hipwizard.doctor.matrix import CompatMatrix
from hipwizard.doctor.models import EnvReport
from hipwizard.doctor.rawtext import major_minor

MachineKind = Literal["amd", "nvidia", "none"]


@dataclass
class CheckContext:
    env: EnvReport
    matrix: CompatMatrix

    @property
    def kind(self) -> MachineKind:
        """amd: AMD GPUs visible; nvidia: only NVIDIA GPUs (the source side); none: no GPU at all."""
        if self.env.amd_gpus:
            return "amd"
        if self.env.nvidia_gpus:
            return "nvidia"
        return "none"

    def no_gpu_reason(self) -> str:
        """Why no GPU is visible, in the tools' own words (for the n/a of GPU checks)."""
        reasons = []
        if self.env.amd_driver_note:
            reasons.append(self.env.amd_driver_note)
        nv = self.env.probe("nvidia-smi")
        if nv is not None and nv.status == "missing":
            reasons.append("nvidia-smi not installed")
        if not self.env.rocm_tools_present:
            reasons.append("no ROCm tools installed")
        return "; ".join(reasons) or "no tool listed a GPU"

    def skip_no_gpu(self) -> str:
        return f"skipped: no GPU on this machine ({self.no_gpu_reason()})"

    def skip_nvidia(self) -> str:
        names = ", ".join(sorted({g.name for g in self.env.nvidia_gpus})) or "NVIDIA"
        return f"skipped: this is an NVIDIA machine ({names}), the source side of the migration"

    @property
    def gfx_targets(self) -> list[str]:
        seen: list[str] = []
        for g in self.env.amd_gpus:
            if g.gfx and g.gfx not in seen:
                seen.append(g.gfx)
        return seen

    def suggested_rocm_line(self) -> str:
        """The ROCm line to install a torch wheel for: the system's when usable, else the newest in both tables."""
        line, _ = self.matrix.rocm_line(self.env.rocm_version) if self.env.rocm_version else ("", False)
        if line and self.matrix.torch_for_rocm(line):
            return line
        both = [k for k in self.matrix.rocm if self.matrix.torch_for_rocm(k)]
        return max(both, key=lambda v: major_minor(v) or (0, 0)) if both else "6.4"

    def torch_fix(self) -> str:
        line = self.suggested_rocm_line()
        return f"pip install torch --index-url {self.matrix.wheel_index(line)}"
