"""The GPU a plan is for: its memory, its architecture, whether it computes in bfloat16.

A ``DeviceTarget`` comes from (in order) what the user said (``--vram``, ``--device``, ``--arch``), the
doctor's last report in the workspace, or the default: one MI300X, the machine hipwizard migrates to.
``source`` always says which, so a plan never silently assumes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from hipwizard.doctor import GpuInfo

# Usable device memory in GiB as the vendor tools report it (MiB / 1024), and the ISA.
KNOWN_DEVICES: dict[str, tuple[str, float, str]] = {
    "mi300x": ("AMD Instinct MI300X", 192.0, "gfx942"),
    "mi325x": ("AMD Instinct MI325X", 256.0, "gfx942"),
    "mi250x": ("AMD Instinct MI250X (one GCD)", 64.0, "gfx90a"),
    "mi210": ("AMD Instinct MI210", 64.0, "gfx90a"),
    "h200": ("NVIDIA H200", 140.4, "sm_90"),
    "h100": ("NVIDIA H100 80GB", 79.6, "sm_90"),
    "a100": ("NVIDIA A100 80GB", 79.2, "sm_80"),
    "v100": ("NVIDIA V100 32GB", 31.7, "sm_70"),
}
DEFAULT_DEVICE = "mi300x"

# AMD ISAs with bfloat16 matrix instructions; everything else of AMD's is treated as without.
_AMD_BF16 = re.compile(r"^gfx(908|90a|94\d|95\d|11\d\d|12\d\d)$")
_AMD_NO_BF16 = re.compile(r"^gfx(80\d|90[0-6]|10\d\d)$")


@dataclass(frozen=True)
class DeviceTarget:
    name: str
    vram_gib: float | None
    arch: str = ""  # gfx942, sm_90, ...
    source: str = ""  # "the VRAM given", "device h200", "doctor report", "default (...)": where it came from

    @property
    def bf16(self) -> bool | None:
        """True/False when the architecture is known, None when it cannot be told."""
        return arch_has_bf16(self.arch)

    @property
    def fp8(self) -> bool | None:
        return arch_has_fp8(self.arch)


def arch_has_fp8(arch: str) -> bool | None:
    """FP8 matrix instructions: NVIDIA from sm_89 (Ada, Hopper, Blackwell); AMD as the compatibility matrix says
    (gfx942: FNUZ, gfx950/gfx1201: OCP, gfx90a: none); None when the architecture cannot be told."""
    arch = _normal_arch(arch)
    if arch.startswith("gfx"):
        from hipwizard.doctor.judge.matrix import load_matrix

        facts = load_matrix().gfx_facts(arch)
        return None if facts is None or facts.fp8 == "unknown" else facts.fp8 != "none"
    m = re.match(r"^(?:sm_?)?(\d{1,2})\.?(\d)a?$", arch)
    return (int(m.group(1)), int(m.group(2))) >= (8, 9) if m else None


def _normal_arch(arch: str) -> str:
    """``gfx942:sramecc+:xnack-`` -> ``gfx942``; lower case, no spaces."""
    return (arch or "").strip().lower().split(":")[0]


def arch_has_bf16(arch: str) -> bool | None:
    arch = _normal_arch(arch)
    if not arch:
        return None
    if _AMD_BF16.match(arch):
        return True
    if _AMD_NO_BF16.match(arch):
        return False
    m = re.match(r"^(?:sm_?)?(\d)\.?(\d)$", arch)
    if m:
        return int(m.group(1)) >= 8
    return None


def resolve_device(
    *, vram_gib: float | None = None, device: str | None = None, arch: str | None = None,
    doctor_gpus: "Sequence[GpuInfo]" = (),
) -> DeviceTarget:
    """Pick the target from explicit values, then the GPUs of the doctor's report
    (``doctor.state.target_facts(ws).gpus``), then the default MI300X."""
    if device is not None:
        key = device.strip().lower()
        if key not in KNOWN_DEVICES:
            raise ValueError(f"unknown device {device!r}; known: {', '.join(KNOWN_DEVICES)}")
        name, vram, isa = KNOWN_DEVICES[key]
        return DeviceTarget(name, vram if vram_gib is None else vram_gib, arch or isa, f"device {key}")
    found = _from_doctor(doctor_gpus)
    if vram_gib is not None:
        base = found or DeviceTarget("GPU", None)
        return DeviceTarget(base.name, vram_gib, arch or base.arch, "the VRAM given")
    if found is not None:
        return DeviceTarget(found.name, found.vram_gib, arch or found.arch, found.source)
    name, vram, isa = KNOWN_DEVICES[DEFAULT_DEVICE]
    return DeviceTarget(name, vram, arch or isa, f"default ({name}; give the VRAM or run the doctor)")


def _from_doctor(gpus: "Sequence[GpuInfo]") -> DeviceTarget | None:
    for gpu in gpus:
        if not gpu.vram_bytes or gpu.vram_bytes <= 0:
            continue
        arch = gpu.gfx or ("sm_" + gpu.compute_capability.replace(".", "") if gpu.compute_capability else "")
        return DeviceTarget(gpu.name or "GPU", round(gpu.vram_bytes / 2**30, 1), arch, "doctor report")
    return None
