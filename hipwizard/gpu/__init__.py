"""GPU telemetry shared by doctor and train: amdsmi / amd-smi / rocm-smi / sysfs / NVML / nvidia-smi.

``GpuTelemetry().sample() -> GpuReading`` (source name + one ``GpuSample`` per device).
"""

from hipwizard.gpu.sample import GpuProcess, GpuReading, GpuSample, fmt_bytes
from hipwizard.gpu.sources import GpuTelemetry, SourceUnavailable, detect_platform

__all__ = ["GpuProcess", "GpuReading", "GpuSample", "GpuTelemetry", "SourceUnavailable", "detect_platform", "fmt_bytes"]
