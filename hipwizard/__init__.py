"""hipwizard: CUDA kernels and a LLaMA-Factory recipe, from NVIDIA to AMD Instinct MI300X (ROCm)."""

__version__ = "0.1.0"
