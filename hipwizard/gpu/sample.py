"""What one look at the GPUs returns: a ``GpuSample`` per device and the source that answered."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuProcess:
    """A process using a GPU, with its VRAM where the source can tell (else None)."""

    pid: int
    name: str = ""
    vram_bytes: int | None = None


@dataclass(frozen=True)
class GpuSample:
    """One device (or one partition of a partitioned MI300X) at one moment.

    VRAM in bytes; ``util_pct`` is graphics/compute activity 0-100. Any value the source does not
    report is None — never guessed.
    """

    index: int
    name: str = ""
    vram_used: int | None = None
    vram_total: int | None = None
    util_pct: float | None = None
    processes: tuple[GpuProcess, ...] = ()

    @property
    def vram_fraction(self) -> float | None:
        if self.vram_used is None or not self.vram_total:
            return None
        return self.vram_used / self.vram_total

    def vram_of(self, pids: set[int]) -> int | None:
        """VRAM used by the given processes on this device, or None when the source cannot tell."""
        known = [p.vram_bytes for p in self.processes if p.pid in pids and p.vram_bytes is not None]
        if not self.processes:
            return None
        return sum(known)


@dataclass(frozen=True)
class GpuReading:
    """The result of one sampling: which source answered and what it said.

    ``source`` is one of amdsmi, amd-smi, rocm-smi, sysfs, nvml, nvidia-smi, or "none";
    ``notes`` say why earlier sources did not answer (shown in the doctor and the run view).
    """

    source: str
    samples: tuple[GpuSample, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def largest_vram_total(self) -> int | None:
        """The VRAM of the biggest single device.

        Partitions of one MI300X (CPX/QPX modes) each report the whole package's VRAM, so totals
        are never summed across devices.
        """
        totals = [s.vram_total for s in self.samples if s.vram_total]
        return max(totals) if totals else None

