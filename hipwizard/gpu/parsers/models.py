"""What a GPU tool's output says, as parsed: ``ToolView`` (GPUs, driver state, versions, usage samples).

Plain dataclasses (stdlib only). ``GpuInfo`` is also the GPU of the doctor's saved report, so its fields
are part of that JSON format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from hipwizard.gpu.sample import GpuSample

T = TypeVar("T")


@dataclass
class Parsed(Generic[T]):
    """A parser's answer: the value it could read, and what it could not read (errors are values)."""

    value: T
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems


@dataclass
class GpuInfo:
    """One GPU as a tool reported it. For a partitioned MI300X each logical GPU is one entry."""

    index: int
    vendor: Literal["amd", "nvidia"]
    name: str = ""
    gfx: str = ""  # base target, e.g. "gfx942" (no feature suffixes)
    gfx_full: str = ""  # e.g. "gfx942:sramecc+:xnack-"
    vram_bytes: int | None = None
    compute_partition: str = ""  # SPX, DPX, QPX, CPX (MI300)
    memory_partition: str = ""  # NPS1, NPS4
    bdf: str = ""
    uuid: str = ""
    compute_capability: str = ""  # NVIDIA only, e.g. "9.0"
    driver_version: str = ""
    source: str = ""  # which tool said so
    device_id: str = ""  # PCI device id, e.g. "0x74a1" (named through gpu.parsers.pci_ids)

    @property
    def is_partition(self) -> bool:
        """True when this logical GPU is one partition of a physical device (never sum their VRAM)."""
        return self.compute_partition.upper() in {"DPX", "TPX", "QPX", "CPX"}

    @property
    def vram_gib(self) -> float | None:
        return None if self.vram_bytes is None else self.vram_bytes / 2**30


@dataclass
class ToolView:
    """What one tool said: the GPUs it listed, whether the amdgpu driver is usable, versions it printed.

    ``samples`` (smi tools only; empty for rocminfo) has one ``GpuSample`` per listed GPU with the usage the
    output carried; values it did not carry are None. Telemetry reads these, the doctor reads ``gpus``.
    """

    tool: str
    gpus: list[GpuInfo] = field(default_factory=list)
    driver_loaded: bool | None = None  # None: the output said nothing either way
    driver_note: str = ""  # the tool's own words when the driver is not usable
    versions: dict[str, str] = field(default_factory=dict)  # "rocm", "amdgpu", "tool", "kfd", "nvidia"
    samples: list[GpuSample] = field(default_factory=list)
