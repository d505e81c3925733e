"""What kind of machine the checks are looking at, decided once from the EnvReport."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hipwizard.doctor.judge.matrix import CompatMatrix
from hipwizard.doctor.models import CheckStatus, EnvReport
from hipwizard.doctor.probe.replay import NOT_RECORDED
from hipwizard.doctor.read.versions import major_minor

MachineKind = Literal["amd", "nvidia", "none"]
GPU_TOOLS = ("rocminfo", "amd-smi", "amd-smi list", "amd-smi static", "rocm-smi", "rocm-smi concise",
             "nvidia-smi", "nvidia-smi table", "lspci", "amd-smi monitor", "collect_env", "llamafactory env")
ROCM_SOURCES = ("rocm version file", "amd-smi", "amd-smi version", "hipconfig")
DRIVER_SOURCES = ("rocminfo", "amd-smi", "amd-smi version", "amd-smi static", "rocm-smi", "rocm-smi concise",
                  "amdgpu version", "amdgpu modinfo")
PYTHON_SOURCES = ("python", "collect_env", "llamafactory env", "pip list")


@dataclass
class CheckContext:
    env: EnvReport
    matrix: CompatMatrix
    replay: bool = False  # answers come from a recording: a missing input is "not recorded", not absent

    def unrecorded(self, *names: str) -> bool:
        """In a replay: True when none of these probes' outputs was recorded (their checks say unknown)."""
        if not self.replay:
            return False
        for name in names:
            rec = self.env.probe(name)
            if rec is not None and NOT_RECORDED not in rec.explanation:
                return False
        return True

    def not_recorded(self, what: str) -> str:
        return f"unknown (not recorded): {what}"

    def arch_needs(self) -> tuple[str, str]:
        """(minimum ROCm line, why) for the detected gfx targets; the migration target's when none is known."""
        facts = [f for f in (self.matrix.gfx_facts(g) for g in self.gfx_targets) if f is not None and f.min_rocm]
        if not facts:
            target = str(self.matrix.target.get("gfx", "gfx942"))
            tf = self.matrix.gfx_facts(target)
            return str(self.matrix.target.get("min_rocm", "6.0")), (tf.needs() if tf else "MI300X (gfx942) needs ROCm 6.0 or newer")
        worst = max(facts, key=lambda f: major_minor(f.min_rocm) or (0, 0))
        return worst.min_rocm, "; ".join(f.needs() for f in facts)

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

    def cut_short(self) -> str:
        """In a replay where no GPU is listed: the first 'truncated?' problem when every GPU tool output that
        was recorded looks cut off (a pasted excerpt that ends before any GPU, which says nothing of the GPUs),
        else ''."""
        if not self.replay:
            return ""
        recorded = [r for r in (self.env.probe(n) for n in GPU_TOOLS) if r is not None and NOT_RECORDED not in r.explanation]
        cut = [next((p for p in r.problems if "truncated" in p), "") for r in recorded]
        return cut[0] if cut and all(cut) and not self.env.amd_driver_note else ""

    def skip_no_gpu(self) -> str:
        if self.unrecorded(*GPU_TOOLS):
            return self.not_recorded("no GPU tool's output was recorded, and this check needs the GPU")
        if cut := self.cut_short():
            return f"unknown: no GPU listed, but the output looks cut short ({cut})"
        return f"skipped: no GPU on this machine ({self.no_gpu_reason()})"

    def no_gpu_status(self) -> CheckStatus:
        """The status of a GPU check with no GPU listed: n/a, or unknown in a replay without any GPU tool's
        output (no GPU listed there does not mean no GPU)."""
        return "unknown" if self.unrecorded(*GPU_TOOLS) or self.cut_short() else "n/a"

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
