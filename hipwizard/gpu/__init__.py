"""GPU telemetry shared by doctor and train: amdsmi / amd-smi / rocm-smi / sysfs / NVML / nvidia-smi.

``GpuTelemetry().sample() -> GpuReading`` (source name + one ``GpuSample`` per device). The parsers of the
tools' outputs live in ``hipwizard.gpu.parsers``, one module per tool, shared with the doctor. Faces import
this door (``from hipwizard.gpu import GpuTelemetry``), not its modules.
"""

from typing import TYPE_CHECKING

from hipwizard.gpu.sample import GpuProcess, GpuReading, GpuSample
from hipwizard.lazy import lazy_attributes

if TYPE_CHECKING:  # for type checkers; at run time the sources load on first use (below)
    from hipwizard.gpu.sources import GpuTelemetry, SourceUnavailable, detect_platform

# The sources (tool runners and their parsers) load on first use: importing ``hipwizard.gpu.parsers`` (the
# doctor's models do, on every CLI start and the TUI's first frame) must not pull in the telemetry.
__getattr__ = lazy_attributes(__name__, dict.fromkeys(("GpuTelemetry", "SourceUnavailable", "detect_platform"),
                                                      "hipwizard.gpu.sources"))

__all__ = ["GpuProcess", "GpuReading", "GpuSample", "GpuTelemetry", "SourceUnavailable", "detect_platform"]
