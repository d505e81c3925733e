"""GPU telemetry shared by doctor and train: amdsmi / amd-smi / rocm-smi / sysfs / NVML / nvidia-smi."""

