"""Risk rules for what real ports change beyond the device builtins: warp-size plumbing on the host, version and
capability checks, library APIs, tensor-core helpers (issue 15; written from HeCBench's in-sample split).

Two follow simple data flow inside a file: ``WARP32_CONST_USE`` finds the names a file defines from a 32-wide
warp and flags their uses in launch configurations and size expressions; ``TENSOR_CORE_HELPER`` finds the
functions whose bodies hold ``mma.sync`` / ``ldmatrix`` / ``cp.async`` PTX or ``wmma::`` and flags their calls.
"""

from __future__ import annotations

import re

from hipwizard.port.risk.base import RiskRule, _rx
from hipwizard.port.risk.line_search import matching_lines
from hipwizard.port.translation.tables import load_tables, parse_version

_HECB = "zjin-lcf/HeCBench@f27000a5"
# CUDA toolkit and library version macros HIP does not define (RCCL does define NCCL_VERSION_CODE/NCCL_MAJOR)
_VERSION_MACRO = (r"(?:CUDA_VERSION|CUDART_VERSION|__CUDACC_VER_(?:MAJOR|MINOR|BUILD)__|__CUDA_API_VERSION|"
                  r"CU(?:BLAS|BLASLT|SPARSE|SOLVER|FFT|RAND)_VER(?:SION|_MAJOR|_MINOR|_PATCH|_BUILD)|"
                  r"CUDNN_(?:VERSION|MAJOR|MINOR|PATCHLEVEL)|CUTLASS_(?:MAJOR|MINOR)|CUB_VERSION)\b")
_HIP_DOC = "ROCm/HIP@c5e11fca docs/reference/kernel_language.rst"
_ARCH = "ROCm/ROCm@e396b489 docs/reference/gpu-arch-specs.rst (MI300X: wave 64, 304 CUs)"

# a name defined from 32 that reads as a warp width: #define WARP_SIZE 32, const int ws = 32, constexpr int kWarp = 32
_WARPISH = r"(?:\w*(?:warp|WARP|Warp|lane|LANE|Lane|wave|WAVE|Wave)\w*|ws|WS|wsize|WSIZE|kWarpSize|THREADS_PER_WARP)"
_DEF_32 = re.compile(rf"#\s*define\s+({_WARPISH})\s+\(?32[uU]?\)?\s*$|"
                     rf"\b(?:const|constexpr)\b[^=;]*?\b({_WARPISH})\s*=\s*32[uU]?\s*;")


def warp32_consts(lines: list[str]) -> dict[int, str]:
    """{line: name} for each name a file defines from a 32-wide warp."""
    return {i: m.group(1) or m.group(2) for i in matching_lines(_DEF_32, lines) if (m := _DEF_32.search(lines[i]))}


def warp32_const_uses(lines: list[str], names: set[str] | list[str]) -> list[int]:
    """Lines where one of ``names`` sizes something: launch configs, array bounds, template arguments,
    ``* / %`` arithmetic, comparisons."""
    if not names:
        return []
    name = "|".join(map(re.escape, sorted(names)))
    use = re.compile(rf"<<<[^>]*\b(?:{name})\b|\[[^\]]*\b(?:{name})\b[^\]]*\]|<\s*(?:[\w:]+\s*,\s*)*(?:{name})\s*[,>]|"
                     rf"[*/%]\s*\(?\s*(?:{name})\b|\b(?:{name})\s*\)?\s*[*/%]|[<>=!]=?\s*(?:{name})\b|"
                     rf"\b(?:{name})\s*[<>=!]=?(?!=)|dim3\s*\([^)]*\b(?:{name})\b")
    return matching_lines(use, lines)


def _warp32_const_use(lines: list[str]) -> list[int]:
    defs = warp32_consts(lines)
    return [i for i in warp32_const_uses(lines, set(defs.values())) if i not in defs]


_TC_ASM = re.compile(r"\b(?:mma\.sync|ldmatrix|cp\.async|wgmma)\b|\bwmma::(?:mma_sync|load_matrix_sync|store_matrix_sync)")
_FUNC = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:(?:static|inline|__inline__|__noinline__|__device__|__host__|"
                   r"__forceinline__|__global__|constexpr|DEVICE|HOST_DEVICE|INLINE)\s+)+[\w:<>,\s*&]*?\b(\w+)\s*\(")


def _tensor_core_helper(lines: list[str]) -> list[int]:
    # the asm strings are masked, so read the asm lines' opcodes from what the mask keeps: the keyword 'asm' on a
    # line near the helper's head, and wmma:: calls (code). PTX text itself is gone, so look for its callers by
    # the functions whose body holds asm or wmma calls.
    hits = matching_lines(re.compile(r"\basm\b|\bwmma::\w+_sync\b|\bmma_sync\b"), lines)
    if not hits:
        return []
    helpers: set[str] = set()
    for i in hits:
        for j in range(i, max(-1, i - 40), -1):
            m = _FUNC.match(lines[j])
            if m and m.group(1) not in ("if", "for", "while", "switch", "return"):
                helpers.add(m.group(1))
                break
    return call_lines(lines, helpers)


def call_lines(lines: list[str], functions: set[str]) -> list[int]:
    """Lines that call one of ``functions`` (``f(``, ``f<T>(``, ``ns::f(``), their definitions aside."""
    if not functions:
        return []
    call = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, sorted(functions))) + r")\s*(?:<[^;()]*>)?\s*\(")
    return [i for i in matching_lines(call, lines) if not _FUNC.match(lines[i])]


_LIB_NAME = re.compile(r"\b(?:cublas(?:Lt)?|cusparse|cusolver(?:Dn|Sp|Rf)?|curand|cufft|cudnn|cutensor)[A-Z]\w*|"
                       r"\bhipblas\w+_v2(?:_64)?\b")


def _library_leftover(lines: list[str]) -> list[int]:
    # a library-prefixed name is a leftover only when HIPIFY knows it and has no HIP name for it (a project's
    # own cublasHandle / cusparseCheck is not); hipBLAS's *_v2 names are HIPIFY's own output
    tables = load_tables()
    out = []
    for i in matching_lines(_LIB_NAME, lines):
        for m in _LIB_NAME.finditer(lines[i]):
            name = m.group()
            mapping = tables.get(name) if name.startswith("cu") else None
            if name.startswith("hipblas") or (mapping is not None and not mapping.supported):
                out.append(i)
                break
    return out


_CU_NAME = re.compile(r"\b(?:cu|CU)[A-Za-z]\w*")
RECENT = (6, 0)  # a HIP name added in this ROCm or later is missing from the installs many ports still target


def _recent_hip_api(lines: list[str]) -> list[int]:
    # a CUDA name whose HIP counterpart HIPIFY dates to ROCm >= 6.0 (hipsparseGetErrorString, hipMemLocation):
    # ports written for older ROCm spell the older API or their own helper
    tables = load_tables()
    out = []
    for i in matching_lines(_CU_NAME, lines):
        for m in _CU_NAME.finditer(lines[i]):
            mapping = tables.get(m.group())
            if mapping is not None and mapping.hip and (parse_version(mapping.hip_added) or (0,)) >= RECENT:
                out.append(i)
                break
    return out


def _recent_reason(code: str) -> str:
    """The reason with each recent name's own version, as the API note for the same call says it
    (``builtin``: "<hip name> needs ROCm >= <the tables' 'A' column>")."""
    tables = load_tables()
    said = []
    for m in _CU_NAME.finditer(code):
        mapping = tables.get(m.group())
        if mapping is not None and mapping.hip and (parse_version(mapping.hip_added) or (0,)) >= RECENT:
            said.append(f"{mapping.hip} needs ROCm >= {mapping.hip_added}")
    if not said:
        return ""
    return (f"its HIP counterpart is recent per HIPIFY's tables ({'; '.join(dict.fromkeys(said))}): an older ROCm "
            "lacks it, and ports meant to build there call the older API or their own helper")


_HALF_T = r"(?:__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|__hip_bfloat162?|hip_bfloat16)"
_HALF_PTR = re.compile(rf"\b{_HALF_T}\s*\*\s*(?:__restrict__\s+|const\s+)*(\w+)")
_ATOMIC_HALF_CAST = re.compile(rf"\batomicAdd\s*\(\s*\(\s*{_HALF_T}\s*\*\s*\)")


def _half_atomic(lines: list[str]) -> list[int]:
    # atomicAdd on a half/bf16 address: a cast in the call, or a pointer the file declares with such a type
    hits = set(matching_lines(_ATOMIC_HALF_CAST, lines))
    names = {m.group(1) for i in matching_lines(_HALF_PTR, lines) for m in _HALF_PTR.finditer(lines[i])}
    if names:
        name = "|".join(map(re.escape, sorted(names)))
        hits.update(matching_lines(re.compile(rf"\batomicAdd\s*\(\s*&?\s*\(?\s*(?:{name})\b"), lines))
    return sorted(hits)


_OCCUPANCY = re.compile(r"\b(?:maxThreadsPerMultiProcessor|multiProcessorCount|maxBlocksPerMultiProcessor|"
                        r"regsPerMultiprocessor|(?:cuda|hip)DevAttrMultiProcessorCount|"
                        r"hipDeviceAttributeMultiprocessorCount|(?:cuda|hip)OccupancyMaxActiveBlocksPerMultiprocessor)\b")

HOST_RULES: tuple[RiskRule, ...] = (
    RiskRule("WARP32_CONST_USE", "high", "a constant defined from a 32-wide warp sizes this launch, array or loop; "
             "a gfx942 wavefront has 64 lanes",
             "derive it from warpSize (a per-target constexpr for templates and array bounds) and re-check the "
             "grid/block maths", f"{_HECB} src/gc-hip, src/gemv-hip (WS/warp_size -> warpSize); {_ARCH}",
             _warp32_const_use),
    RiskRule("COMPUTE_CAPABILITY", "med", "compute-capability check: MI300X reports 9.4, which no NVIDIA-tuned branch "
             "expects", "decide on gcnArchName / features (hipDeviceProp_t::gcnArchName), not on major/minor",
             f"{_HECB} src/atomicSystemWide-hip, src/attentionMultiHeadKVCache-hip; {_ARCH}",
             _rx(r"\.\s*(?:major|minor)\b", r"\b(?:cuda|hip)DevAttrComputeCapability\w*",
                 r"\bhipDeviceAttributeComputeCapability\w*", r"\bget(?:Cuda|Hip)?ComputeCapab\w*")),
    RiskRule("CUDA_VERSION_GUARD", "med", "#if on a CUDA toolkit or library version macro (CUDA_VERSION, CUDART_VERSION, "
             "__CUDACC_VER_MAJOR__, CUBLAS_VER_MAJOR, CUDNN_VERSION, ...): HIP defines none of them, and an undefined "
             "name in #if reads as 0, so the old-CUDA branch is compiled (or a feature silently switched off)",
             "guard on HIP's own: __HIP_PLATFORM_AMD__, HIP_VERSION / HIP_VERSION_MAJOR (hip/hip_version.h), "
             "hipblasVersionMajor (hipblas/hipblas-version.h), ROCBLAS_VERSION_MAJOR (rocblas/internal/rocblas-version.h), "
             "MIOPEN_VERSION_MAJOR (miopen/version.h); RCCL keeps NCCL_VERSION_CODE",
             f"ROCm/HIP@c5e11fca docs/how-to/hip_porting_guide.md L148-198; C11 6.10.1p4 (undefined identifiers in #if "
             f"are 0); ROCm/hipBLAS library/include/hipblas-version.h.in; {_HECB}",
             _rx(rf"^\s*#\s*(?:el)?if.*\b{_VERSION_MACRO}", rf"^\s*#\s*(?:el)?if(?:n)?def\s+{_VERSION_MACRO}")),
    RiskRule("GRID_CONSTANT", "med", "__grid_constant__ is not in the HIP kernel language (the built-in drops it)",
             "pass the parameter by value (HIP kernel arguments are already constant)", f"{_HIP_DOC} (not listed)",
             _rx(r"\b__grid_constant__\b")),
    RiskRule("HIPBLAS_TYPES", "med", "cuBLAS compute/data types and Ex calls: hipBLAS wants hipblasHalf / "
             "hipDataType (v2 API since ROCm 6) and its own compute types",
             "pass hipblasHalf* (or reinterpret_cast) and HIP_R_* / HIPBLAS_COMPUTE_* values; check the Ex call's "
             "signature for your ROCm", f"{_HECB} src/blas-gemmEx-hip, src/blas-gemm-hip",
             _rx(r"\b(?:cu|hip)blas(?:Gemm\w*Ex|Hgemm\w*|\w*Ex)(?:_v2)?\s*\(", r"\bCUDA_R_\d+\w*\b",
                 r"\bCUBLAS_COMPUTE_\w+", r"\bCUBLAS_GEMM_DEFAULT\w*", r"\bcublasComputeType_t\b")),
    RiskRule("NCCL_RCCL", "med", "NCCL -> RCCL: same API, other header and library (rccl/rccl.h, -lrccl)",
             "include <rccl/rccl.h>, link librccl; check NCCL-version-specific calls against RCCL's",
             "https://rocm.docs.amd.com/projects/rccl/en/latest/ (RCCL: NCCL API on ROCm)",
             _rx(r"#\s*include\s*[<\"](?:nccl|rccl)(?:/rccl)?\.h")),
    RiskRule("OCCUPANCY_SM", "med", "occupancy maths on SM counts: a CU is not an SM (MI300X: 304 CUs, wave64, "
             "other limits per CU)", "size grids from hipOccupancyMaxActiveBlocksPerMultiprocessor and the CU count "
             "for the target", f"{_HECB}; {_ARCH}", lambda lines: matching_lines(_OCCUPANCY, lines)),
    RiskRule("TENSOR_CORE_HELPER", "high", "calls a helper built on mma.sync / ldmatrix / cp.async PTX or wmma: "
             "AMD needs an MFMA/rocWMMA path (other tile shapes, lane layouts, accumulator order)",
             "port the helper to rocWMMA or MFMA builtins and re-check every caller's tiling",
             f"{_HIP_DOC} L2058-2090; {_HECB} src/*wmma*-hip", _tensor_core_helper),
    RiskRule("SHFL_SHIM", "high", "a macro or wrapper around shuffles/votes: its mask and width are 32-lane",
             "give the shim a HIP branch: 64-bit mask, width warpSize", f"{_HIP_DOC} L1801-1837; {_HECB}",
             _rx(r"#\s*define\s+\w+.*\b__(?:shfl\w*|ballot\w*|any\w*|all\w*|activemask)\b")),
    RiskRule("LIBRARY_LEFTOVER", "med", "a CUDA library name HIPIFY cannot translate (left as is; for cuDNN: no "
             "MIOpen counterpart), or hipBLAS's transitional *_v2 entry point", "find the HIP library's call (e.g. "
             "hipblasStatusToString for cublasGetStatusString); for cuDNN rewrite the step with MIOpen (descriptors "
             "set by miopenSet*, miopenFindConvolutionForwardAlgorithm needs the workspace first); for *_v2 call the "
             "unsuffixed name with HIPBLAS_V2 defined (ROCm >= 6)",
             f"{_HECB} src/dp-hip ('#define HIPBLAS_V2', hipblasDotEx), src/gels-hip, src/tgvnn-hip, src/ludb-hip, "
             "src/convolution3D-hip (cuDNN -> MIOpen); HIPIFY CUDNN_API_supported_by_MIOPEN.md",
             _library_leftover),
    RiskRule("CUB_FUNCTOR", "low", "a project-defined Max/Min/Sum (or identity) functor for a CUB/Thrust reduction: "
             "CCCL 2 dropped cub::Max and friends, so CUDA code defines its own; hipCUB still has hipcub::Max/Min/Sum "
             "and the two meet under the same names", "use hipcub::Max() / hipcub::Min() / hipcub::Sum() (and "
             "thrust::identity<T>()) and drop the local functor", f"{_HECB} src/adamw-hip, src/scan3-hip, "
             "src/topk-hip, src/moe-hip, src/quantVLLM-hip, src/logic-rewrite-hip",
             _rx(r"^\s*struct\s+(?:Max|Min|Sum|identity)\s*\{?\s*$",
                 r"\.\s*(?:Reduce|Sum|InclusiveScan|ExclusiveScan|Scan)\s*\(.*[(,]\s*(?:Max|Min|Sum)\s*(?:\(\s*\)|\{\s*\})",
                 r"[(,]\s*identity\s*\{\s*\}")),
    RiskRule("HELPER_MATH", "med", "the CUDA samples' helper_math.h defines operators on float2/3/4 and friends, "
             "which HIP's vector types already define: redefinitions or ambiguous calls",
             "drop the include; keep (renamed) only the helpers HIP lacks (dot, lerp, clamp on vectors)",
             f"{_HECB} src/boxfilter-hip, src/dxtc2-hip, src/recursiveGaussian-hip, src/hexciton-hip (include "
             "dropped); HIP amd_detail/amd_hip_vector_types.h", _rx(r"#\s*include\s*[<\"](?:\w+/)*helper_math\.h")),
    RiskRule("HALF_ATOMIC", "med", "atomicAdd on a half/half2/bf16 address: HIP before ROCm 6 has no such overload, "
             "and the safe path is a compare-and-swap loop; CDNA's packed FP16 atomics come through unsafeAtomicAdd",
             "call unsafeAtomicAdd (coarse-grained memory, 4-byte aligned; see amd_hip_unsafe_atomics.h) or "
             "accumulate in float", f"{_HECB} src/lut-gemm-hip, src/f16atomic-hip (unsafeAtomicAdd); HIP "
             "amd_detail/amd_hip_unsafe_atomics.h", _half_atomic),
    RiskRule("LIBRARY_HEADER", "low", "a CUDA math library (cuBLAS, cuSPARSE, cuSOLVER, cuRAND, cuFFT, cuDNN) "
             "becomes its HIP wrapper: another header path (ROCm >= 5.2 installs hipblas/hipblas.h and friends, the "
             "flat hipblas.h is a deprecated wrapper), another library to link, and API differences (hipBLAS v2 "
             "types, hipSOLVER handles, hipSPARSE generic API, MIOpen for cuDNN)",
             "include <hipblas/hipblas.h> (hipsparse/, hipsolver/, hiprand/, hipfft/), link -lhipblas etc., and "
             "check each call's types against the HIP library's reference for your ROCm",
             "https://rocm.docs.amd.com/en/latest/conceptual/file-reorg.html; "
             f"{_HECB} src/blas-gemm-hip, src/spmm-hip, src/determinant-hip (hipsolver/hipsolver.h, hipsolverDnHandle_t)",
             # by its base name too: jaxlib includes them through its build's paths ("third_party/gpus/cuda/include/
             # cusolverSp.h", jax-ml/jax@cec06d11 jaxlib/gpu/solver_interface.h, guarded '#ifdef JAX_GPU_CUDA')
             _rx(r"^\s*#\s*include\s*[<\"](?:[\w./-]*/)?(?:cublas(?:_v2|_api)?|cusparse(?:_v2)?|cusolver(?:Dn|Sp|_common)?|"
                 r"curand(?:_kernel)?|cufft(?:Xt)?|cudnn|hipblas|hipsparse|hipsolver|hiprand(?:_kernel)?|hipfft|"
                 r"miopen)\.h[>\"]",
                 r"^\s*#\s*include\s*[<\"](?:hipblas|hipsparse|hipsolver|hiprand|hipfft|miopen)/\w+\.h[>\"]")),
    RiskRule("RECENT_HIP_API", "low", "its HIP counterpart is recent (ROCm >= 6.0 per HIPIFY's tables): an older "
             "ROCm lacks it, and ports meant to build there call the older API or their own helper",
             "keep it if you target ROCm >= 6.0 only; otherwise guard on HIP_VERSION or use the older call",
             f"ROCm/HIPIFY docs/tables (the 'A' column); {_HECB} src/spmm-hip, src/spnnz-hip (no "
             "hipsparseGetErrorString), src/prefetch-hip (no hipMemLocation)", _recent_hip_api, _recent_reason),
    RiskRule("CLOCK_RATE", "low", "clock-rate / clock() timing: AMD's clock counters tick at other rates "
             "(wall_clock64 is 100 MHz)", "time with events (hipEventElapsedTime) or wall_clock64()",
             f"{_HIP_DOC} 'Timer functions'", _rx(r"\b(?:memoryC|c)lockRate\b", r"\bclock64\s*\(\s*\)")),
)
