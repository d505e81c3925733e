"""The Python rules: CUDA-only assumptions in a project's ``.py`` files that a ROCm build of torch (or an AMD
machine) breaks. Each reason is documented at the URL in ``source``; a rule's detector lives in
``visitor.py`` (AST) and, for files that do not parse, ``fallback.py`` (tokens).
"""

from __future__ import annotations

from hipwizard.port.pyscan.model import PyRule

_HIP_NOTES = "https://pytorch.org/docs/stable/notes/hip.html"
_CPP_EXT = "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py"
_ARCH = "https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html"
_AMDSMI_PY = "https://rocm.docs.amd.com/projects/amdsmi/en/latest/reference/amdsmi-py-api.html"
_AMDSMI_CLI = "https://rocm.docs.amd.com/projects/amdsmi/en/latest/how-to/amdsmi-cli-tool.html"
_ALLOC = "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAAllocatorConfig.h"

PY_RULES: tuple[PyRule, ...] = (
    PyRule("PY_CUDA_VERSION_GATE", "high",
           "torch.version.cuda is None on a ROCm build of torch (torch.version.hip is set): this gate takes the "
           "no-GPU / CPU-only branch on an AMD GPU",
           "test (torch.version.cuda or torch.version.hip); where the value itself is used, branch on torch.version.hip",
           f"{_HIP_NOTES}#checking-for-hip"),
    PyRule("PY_CUDA_HOME", "high",
           "CUDA_HOME is None on a ROCm build of torch without a CUDA toolkit; torch.utils.cpp_extension sets ROCM_HOME "
           "instead and hipifies CUDAExtension sources at build time, so a CUDA_HOME gate silently builds CPU-only",
           "accept either: (CUDA_HOME or ROCM_HOME) from torch.utils.cpp_extension (ROCM_PATH / ROCM_HOME in the environment)",
           f"{_CPP_EXT} (ROCM_HOME, CUDA_HOME, IS_HIP_EXTENSION); {_HIP_NOTES}"),
    PyRule("PY_DEVICE_CAPABILITY", "med",
           "torch.cuda.get_device_capability() on ROCm is the gfx version, not an NVIDIA SM: MI300X reports (9, 4), "
           "MI250X (9, 0), so '>= 8' holds and '>= 9' picks Hopper-only paths (FP8 e4m3fn, TMA, wgmma kernels)",
           "gate on features (torch.cuda.is_bf16_supported()) or on torch.version.hip and "
           "torch.cuda.get_device_properties(0).gcnArchName (gfx942 = MI300X)",
           f"{_ARCH}; {_HIP_NOTES}"),
    PyRule("PY_CUDNN_VERSION", "low",
           "torch.backends.cudnn is MIOpen on ROCm: version() returns MIOpen's version number, so a comparison "
           "against a cuDNN version means nothing there",
           "branch on torch.version.hip before comparing cuDNN versions",
           "https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py ('CuDNN/MIOpen')"),
    PyRule("PY_NVML", "high",
           "NVML (pynvml / nvidia-ml-py / nvidia_smi) is NVIDIA's driver library: on an AMD machine nvmlInit fails "
           "(NVMLError_LibraryNotFound)",
           "use AMD SMI's Python API (amdsmi: amdsmi_init, amdsmi_get_gpu_activity, amdsmi_get_gpu_vram_usage) or "
           "torch.cuda.mem_get_info / memory_allocated; guard the import",
           _AMDSMI_PY),
    PyRule("PY_NVIDIA_SMI", "high",
           "runs or looks for nvidia-smi, which an AMD machine does not have (its queries and output format are NVIDIA's)",
           "call amd-smi (amd-smi metric / amd-smi static, --json) or rocm-smi and parse their output",
           _AMDSMI_CLI),
    PyRule("PY_COMPILE_MAX_AUTOTUNE", "low",
           "torch.compile max-autotune on ROCm benchmarks Triton (and CK) GEMM candidates: compile time can grow to "
           "hours, and ROCm CI skips several max-autotune tests",
           "measure against the default mode on MI300X; limit max_autotune_gemm_backends to 'ATEN,TRITON'",
           "https://github.com/pytorch/pytorch/issues/143687; https://github.com/pytorch/pytorch/issues/168608"),
    PyRule("PY_INDUCTOR_CUDA_ONLY", "high",
           "Inductor's CUTLASS GEMM backend and its torch._inductor.config.cuda options generate CUTLASS C++ for "
           "nvcc: NVIDIA only (ROCm's template backend is CK, under config.rocm)",
           "drop CUTLASS from max_autotune_gemm_backends (ATEN,TRITON; CK on ROCm) and move cuda.* options to rocm.*",
           "https://github.com/pytorch/pytorch/blob/main/torch/_inductor/config.py (max_autotune_gemm_backends, class cuda, class rocm)"),
    PyRule("PY_ALLOC_CONF", "med",
           "a caching-allocator option ROCm builds of torch reject or handle differently: expandable_segments was "
           "'not supported on this platform' before torch 2.11 + ROCm 7 and has hang/crash reports since; older ROCm "
           "builds accept only the hipified spellings (hipMallocAsync, pinned_use_hip_host_register, "
           "release_lock_on_hipmalloc). PYTORCH_CUDA_ALLOC_CONF itself is read on ROCm (PYTORCH_HIP_ALLOC_CONF only when it is unset)",
           "on ROCm use PYTORCH_HIP_ALLOC_CONF with the hip spellings; test expandable_segments on your torch/ROCm pair",
           f"{_ALLOC}; https://github.com/pytorch/pytorch/pull/177974; https://github.com/pytorch/pytorch/issues/192259"),
    PyRule("PY_TF32", "med",
           "TF32 switches: older ROCm builds of torch ignore them (FP32 speed), torch 2.6-era builds honour matmul TF32 "
           "on MI300 only with HIPBLASLT_ALLOW_TF32=1, and MI300's xf32 numerics differ from NVIDIA TF32; MIOpen "
           "convolutions had no TF32 path",
           "measure FP32 GEMM speed and accuracy on MI300X; set HIPBLASLT_ALLOW_TF32=1 where your torch needs it, or use bf16 autocast",
           "https://github.com/pytorch/pytorch/issues/130600; https://github.com/pytorch/pytorch/pull/139869; "
           "https://docs.pytorch.org/docs/stable/notes/numerical_accuracy.html"),
    PyRule("PY_FLASH_ATTN", "med",
           "flash_attn on ROCm is a separate build: the CK backend (MI200/MI300, fp16/bf16, head dim <= 256) or the "
           "Triton backend (FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE); FlashAttention-3 (flash_attn_interface, Hopper) has no ROCm kernels",
           "install FlashAttention's ROCm build, or use torch.nn.functional.scaled_dot_product_attention (ROCm flash path via AOTriton)",
           "https://github.com/Dao-AILab/flash-attention#amd-rocm-support"),
    PyRule("PY_BITSANDBYTES", "med",
           "bitsandbytes' ROCm support was experimental before 0.48; official ROCm wheels start at 0.50",
           "require bitsandbytes >= 0.50 (ROCm wheel) and test the quantised paths on MI300X",
           "https://huggingface.co/docs/bitsandbytes/main/en/installation"),
    PyRule("PY_APEX", "med",
           "NVIDIA apex's fused CUDA extensions do not build for ROCm; AMD maintains a ROCm fork",
           "install ROCm/apex, or use torch equivalents (torch.amp, fused torch.optim, torch.nn.RMSNorm / layer_norm)",
           "https://github.com/ROCm/apex"),
    PyRule("PY_XFORMERS", "med",
           "xformers' fused kernels are built for CUDA; ROCm builds cover a subset (memory-efficient attention through composable_kernel)",
           "use torch.nn.functional.scaled_dot_product_attention, or a ROCm build of xformers and check each op",
           "https://github.com/facebookresearch/xformers#installing-xformers"),
    PyRule("PY_TRITON", "low",
           "Triton on ROCm: a warp is a 64-lane wavefront (num_warps counts waves), autotune configs and block sizes "
           "tuned on NVIDIA rarely fit; triton.language.extra.cuda (libdevice) and TMA descriptors are NVIDIA-only",
           "re-tune configs on MI300X; use triton.language.extra.libdevice instead of extra.cuda",
           "https://rocm.docs.amd.com/en/latest/how-to/rocm-for-ai/inference-optimization/optimizing-triton-kernel.html"),
    PyRule("PY_NVTX", "low",
           "NVTX ranges: ROCm builds of torch route torch.cuda.nvtx to roctx when built with it (else 'NVTX functions "
           "not installed'); the nvtx pip package is NVIDIA-only and Nsight does not read AMD profiles",
           "profile with rocprofv3 --marker-trace; guard the nvtx package import",
           "https://github.com/pytorch/pytorch/blob/main/torch/csrc/cuda/shared/nvtx.cpp; https://github.com/ROCm/hip/issues/1638"),
)

PY_RULES_BY_ID = {rule.rule_id: rule for rule in PY_RULES}
