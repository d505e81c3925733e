"""GPU telemetry shared by doctor and train: amdsmi / amd-smi / rocm-smi / sysfs / NVML / nvidia-smi.

``GpuTelemetry().sample() -> GpuReading`` (source name + one ``GpuSample`` per device). The parsers of the
tools' outputs live in ``hipwizard.gpu.parsers``, one module per tool, shared with the doctor.
"""

from hipwizard.gpu.sample import GpuProcess, GpuReading, GpuSample
from hipwizard.gpu.sources import GpuTelemetry, SourceUnavailable, detect_platform

__all__ = ["GpuProcess", "GpuReading", "GpuSample", "GpuTelemetry", "SourceUnavailable", "detect_platform"]
