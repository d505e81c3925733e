"""The device-code rules of the risk catalogue (``rules``) on CDNA3 (MI300X, gfx942, wave64): one small detector
per rule.

Ids, severities and sources follow the project's PORTING_RISKS table. Every detector reads *masked* code
lines (comments and strings blanked, ``#include`` lines kept) so comments and strings never trigger a rule.
A detector is either a regex searched per line, or a function ``(lines) -> [0-based line indices]`` for
the rules that need a look beyond one line.
"""

from __future__ import annotations

import re

from hipwizard.port.risk.base import RiskRule, _rx
from hipwizard.port.risk.line_search import matching_lines

_WARP_NAME = r"\w*(?:warp|WARP|Warp|lane|LANE|wave|WAVE|Wave)\w*"
_SHFL_16 = re.compile(r"\bfor\s*\([^;]*=\s*(?:16|32\s*/\s*2|\(\s*32\s*/\s*2\s*\))[uU]?\s*;[^;]*;[^)]*(?:>>=|/=|>>|/)")
_SHFL_UP_32 = re.compile(r"\bfor\s*\([^;]*=\s*1[uU]?\s*;[^;]*<=?\s*(?:32|16)[uU]?\s*;[^)]*(?:<<=|\*=)")
_SHFL_CALL_16 = re.compile(r"__shfl_(?:xor|down)\w*\s*\((?:[^()]|\([^()]*\))*,\s*16[uU]?\s*[,)]")


def _shfl_loop_16(lines: list[str]) -> list[int]:
    return _any_of(lines, _SHFL_16, _SHFL_UP_32, _SHFL_CALL_16)


def _any_of(lines: list[str], *rxs: re.Pattern) -> list[int]:
    """Lines any of ``rxs`` matches, in order."""
    return sorted({i for rx in rxs for i in matching_lines(rx, lines)})


_CUDA_TYPES = (r"\b(?:__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|__hip_bfloat162?|hip_bfloat16|"
               r"cudaDataType(?:_t)?|hipDataType|hipblasDatatype_t|cublasComputeType_t|hipblasComputeType_t|"
               r"(?:u?char|u?short|u?int|u?long|longlong|float|double)[1-4])\b")
_TEMPLATE_EMPTY = re.compile(r"\btemplate\s*<\s*>")
_PARTIAL_SPEC = re.compile(r"\b(?:struct|class)\s+\w+\s*<[^;{]*" + _CUDA_TYPES)
_TYPE_RX = re.compile(_CUDA_TYPES)
_WARP_SPEC = re.compile(r"<\s*(?:32|64)\s*>")


def _template_specialization(lines: list[str]) -> list[int]:
    hits: set[int] = set()
    for i in _any_of(lines, _TEMPLATE_EMPTY, _PARTIAL_SPEC):
        line = lines[i]
        if _TEMPLATE_EMPTY.search(line):
            # the specialised declaration follows within a few lines
            for j in range(i, min(i + 3, len(lines))):
                if _TYPE_RX.search(lines[j]) or _WARP_SPEC.search(lines[j]):
                    hits.add(j)
                    break
        elif _PARTIAL_SPEC.search(line) and "template" in " ".join(lines[max(0, i - 2):i + 1]):
            hits.add(i)
    return sorted(hits)


_HALF2_DECL = re.compile(r"\b(?:__half2|half2)\s*[*&]?\s*(\w+)\s*[=;,)\[]")


def _half2_xy(lines: list[str]) -> list[int]:
    names = {m.group(1) for i in matching_lines(_HALF2_DECL, lines) for m in _HALF2_DECL.finditer(lines[i])}
    if not names:
        return []
    use = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\s*(?:\[[^\]]*\])?\s*\.\s*[xy]\b")
    return matching_lines(use, lines)


_SMEM_ATTR = re.compile(r"\b(?:cuda|hip)FuncAttributeMaxDynamicSharedMemorySize\b|"
                        r"\b(?:cuda|hip)FuncAttributePreferredSharedMemoryCarveout\b|\bcudaSharedmemCarveout\w*|"
                        r"\b(?:cuda|hip)(?:Func|Device)SetSharedMemConfig\b")
_STATIC_SMEM = re.compile(r"__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?(?:unsigned\s+)?(\w+)\s+\w+\s*((?:\[\s*\d+\s*\]\s*)+)")
_TYPE_BYTES = {"double": 8, "long": 8, "int64_t": 8, "uint64_t": 8, "float": 4, "int": 4, "uint32_t": 4,
               "int32_t": 4, "__half": 2, "half": 2, "short": 2, "char": 1, "int8_t": 1, "uint8_t": 1,
               "float4": 16, "float2": 8, "double2": 16, "__half2": 4, "half2": 4}
LDS_BYTES = 64 * 1024


def _dyn_smem(lines: list[str]) -> list[int]:
    hits = []
    for i in _any_of(lines, _SMEM_ATTR, _STATIC_SMEM):
        line = lines[i]
        if _SMEM_ATTR.search(line):
            hits.append(i)
            continue
        m = _STATIC_SMEM.search(line)
        if m:
            size = _TYPE_BYTES.get(m.group(1), 4)
            for dim in re.findall(r"\d+", m.group(2)):
                size *= int(dim)
            if size > LDS_BYTES:
                hits.append(i)
    return hits


_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\(((?:[^()]|\([^()]*\))*)\)")


def _launch_bounds(lines: list[str]) -> list[int]:
    out = []
    for i in matching_lines(_LAUNCH_BOUNDS, lines):
        m = _LAUNCH_BOUNDS.search(lines[i])
        if m and re.search(r",", re.sub(r"\([^()]*\)", "", m.group(1))):
            out.append(i)
    return out


_BALLOT_32 = re.compile(r"(?:\bunsigned\b(?!\s+long)(?:\s+int)?|\buint32_t|\bint\b|\bu32|\bunsigned\s+int)\s*\**\s*\w+\s*=\s*"
                        r"(?:\(\s*\w+\s*\)\s*)?__(?:ballot(?:_sync)?|activemask)\s*\(")
_BALLOT_RET = re.compile(r"\b(?:unsigned|uint32_t|int)\s+\w+\s*\([^)]*\)[^;]*\{[^}]*return\s+__ballot")


def _ballot_32(lines: list[str]) -> list[int]:
    return _any_of(lines, _BALLOT_32, _BALLOT_RET)


_DIM3_DECL = re.compile(r"\bdim3\s+((?:\w+\s*(?:\([^()]*\))?\s*,\s*)*\w+)")
_ASSIGN_UINT3 = re.compile(r"\b(\w+)\s*=\s*make_uint3\s*\(")


def _dim3_from_uint3(lines: list[str]) -> list[int]:
    """``grid = make_uint3(...)`` where ``grid`` is a ``dim3`` of this file."""
    names = {n.split("(")[0].strip() for line in lines for m in _DIM3_DECL.finditer(line) for n in m.group(1).split(",")}
    return [i for i, line in enumerate(lines) for m in [_ASSIGN_UINT3.search(line)] if m and m.group(1) in names]


_VEC = r"(?:u?char|u?short|u?int|u?long|(?:u|unsigned)?longlong|float|double)[1-4]"

_HIP_DOC = "ROCm/HIP@c5e11fca docs/reference/kernel_language.rst"
_GUIDE = "ROCm/HIP@c5e11fca docs/how-to/hip_porting_guide.md"
_ARCH = "ROCm/ROCm@e396b489 docs/reference/gpu-arch-specs.rst (MI300X: wave 64, LDS 64 KiB)"
_HECB = "zjin-lcf/HeCBench@f27000a5 src/*-cuda vs src/*-hip"
_BNB = "bitsandbytes-foundation/bitsandbytes@b72b766e csrc/compat.cuh, compat_device.cuh"
_LLMC = "anthonix/llm.c@f3d8550 vs karpathy/llm.c@bd8c604 llmc/*.cuh"

DEVICE_RULES: tuple[RiskRule, ...] = (
    RiskRule("WARP32_LITERAL", "high", "warp size hard-coded to 32; a gfx942 wavefront has 64 lanes",
             "use warpSize (or a 64-wide constant on AMD) and size reductions by it", f"{_GUIDE} L367-369; {_ARCH}",
             _rx(rf"#\s*define\s+{_WARP_NAME}\s+\(?32[uU]?\)?(?!\w)", rf"\b{_WARP_NAME}\s*=\s*32[uU]?\b",
                 r"\bwarpSize\s*[!=]=\s*32\b", r"__shfl\w*\s*\((?:[^()]|\([^()]*\))*,\s*32[uU]?\s*\)",
                 r"threadIdx\.x\s*<\s*32\b", r"\b32\s*\*\s*warp", r"tiled_partition\s*<\s*32\s*>",
                 # the last lane by number (mpc-hip: 'lane == 31' -> 'lane == warpSize - 1')
                 r"(?i)\blane\w*\s*(?:[=!]=|[<>]=?)\s*31[uU]?\b", r"(?i)\(\s*lane\w*\s*\+[^()]*\)\s*[<>]=?\s*31\b")),
    RiskRule("LANE_MASK_31", "high", "lane/warp index computed with &31, %32, >>5 or /32 (assumes 32-wide warps)",
             "compute lane = tid % warpSize and warp = tid / warpSize", f"{_HECB} (mpc: 'threadIdx.x >> 5', '& 31')",
             # "x % 32 == 0" is left out: a size's divisibility or one leader per 32 threads, consistent on a wave64
             # as long as no warp-wide builtin relies on it (those are flagged on their own); mamba's and
             # TransformerEngine's ROCm builds keep it unguarded (issue 32: 10 places, none near a guarded group)
             _rx(r"&\s*(?:31|0x1[fF])[uU]?\b",
                 r"(?i)(?:tid|threadidx\.x|lane|idx|thread)\w*\s*(?:%\s*32(?![uU]?\s*[=!]=)|>>\s*5|/\s*32)[uU]?\b",
                 r"(?i)(?:%\s*32(?![uU]?\s*[=!]=)|>>\s*5|/\s*32)[uU]?\b.*(?:warp|lane)")),
    RiskRule("SHFL_LOOP_16", "high", "shuffle/butterfly reduction starts at offset 16 (or strides to 32): covers 32 of 64 lanes",
             "start the loop at warpSize / 2", f"{_HIP_DOC} L1801-1823 (warpSize); {_HECB}", _shfl_loop_16),
    RiskRule("FULL_MASK_32", "high", "32-bit full lane mask; HIP's _sync builtins take a 64-bit mask (0xffffffff names lanes 0-31 only)",
             "use a 64-bit mask: 0xffffffffffffffffull or __activemask()", f"{_HIP_DOC} L1827-1837; {_BNB}",
             # with C++14 digit separators too (FBGEMM's cuda_prelude.cuh: kFullWarpMask = 0xff'ff'ff'ffu)
             _rx(r"(?i)0x(?:f'?){7}f(?!'?f)u?(?!l)\b.*(?:mask|sync|shfl|ballot|vote|any|all)",
                 r"(?i)(?:mask|sync|shfl|ballot)\w*.*0x(?:f'?){7}f(?!'?f)u?(?!l)\b")),
    RiskRule("SYNC_WARP_BUILTINS", "high", "*_sync warp builtins: absent before HIP 6.2, opt-in in 6.x (HIP_ENABLE_WARP_SYNC_BUILTINS), default in ROCm 7",
             "use the non-_sync forms (__shfl_xor, __ballot) or require ROCm 7 / define HIP_ENABLE_WARP_SYNC_BUILTINS",
             f"ROCm/HIPIFY@014177bc src/CUDA2HIP_Device_functions.cpp:675-682; {_HIP_DOC} L1832-1837",
             _rx(r"\b__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|match_any|match_all|reduce_(?:add|min|max|and|or|xor))_sync\s*\(")),
    RiskRule("BALLOT_32BIT", "high", "__ballot/__activemask return 64 bits on AMD; a 32-bit variable drops lanes 32-63",
             "store masks in unsigned long long / uint64_t", f"{_HIP_DOC} L1863-1877", _ballot_32),
    RiskRule("POPC_FFS_MASK", "med", "32-bit bit operation on a warp mask",
             "use __popcll / __ffsll / __clzll on 64-bit masks", f"{_HIP_DOC} L1863-1877",
             _rx(r"(?i)__(?:popc|ffs|clz)\s*\([^)]*(?:mask|ballot|active|vote)")),
    RiskRule("LANE_SHIFT_1U", "med", "'1 << lane' is a 32-bit shift: undefined for lanes 32-63",
             "shift a 64-bit one: 1ull << lane", f"{_HIP_DOC} L1827 (all masks 64-bit)",
             _rx(r"(?<![\w.])1[uU]?(?![lL\w])\s*<<\s*\(?\s*(?:[\w.]*(?:lane|Lane|LANE)\w*|threadIdx\.x|tid)\b")),
    RiskRule("WARPSIZE_CONSTEXPR", "med", "warpSize used where a compile-time constant is needed (ROCm 7 removed its constexpr)",
             "use a constexpr of your own per target (64 on gfx942) for template args and array bounds",
             f"{_HIP_DOC} L1823; {_BNB} 'Fix for warpSize deprecation in ROCm 7.0'",
             _rx(r"<\s*warpSize\s*[>,]", r"\[\s*warpSize\s*\]", r"static_assert\s*\(.*\bwarpSize\b",
                 r"constexpr\b.*=\s*.*\bwarpSize\b", r"\bcase\s+warpSize\b")),
    RiskRule("SYNCWARP_ITS", "med", "relies on independent thread scheduling; HIP has none (waves run in lockstep)",
             "review divergent-lane sync patterns; __syncwarp is usually a no-op on AMD",
             f"{_HIP_DOC} 'Independent thread scheduling'; {_BNB}", _rx(r"\b__syncwarp\s*\(")),
    RiskRule("TEMPLATE_SPECIALIZATION", "med", "template specialisation keyed on a CUDA type or warp size: after renaming it can collide or stop matching",
             "check that each specialised HIP type is distinct (e.g. __hip_bfloat16 vs hip_bfloat16) and still selected",
             "ROCm/HIP docs on __hip_bfloat16 vs hip_bfloat16; common migration practice", _template_specialization),
    RiskRule("INLINE_PTX", "high", "inline PTX asm: HIP-Clang accepts only AMDGPU asm (fails at device codegen)",
             "replace with a HIP builtin/intrinsic or guard it with #ifdef __HIP_PLATFORM_AMD__",
             "ROCm/HIP@c5e11fca docs/how-to/faq.md L40; kernel_language.rst L2276-2290",
             _rx(r"\basm\s*(?:volatile|__volatile__)?\s*\(", r"\b__asm__\b", r"\b__asm\b")),
    RiskRule("HOPPER_ASYNC", "high", "Ampere/Hopper async copy, TMA, wgmma, mbarrier or clusters: no HIP equivalent on gfx942",
             "redesign: direct global->LDS loads, composable_kernel or rocWMMA", f"{_HIP_DOC} (not listed)",
             _rx(r"\b__pipeline_\w+", r"\bmemcpy_async\b", r"\bcuda::(?:pipeline|barrier|ptx)\b", r"\bmbarrier\w*",
                 r"\bwgmma\w*", r"__cluster_dims__", r"\bthis_cluster\b", r"\bcudaLaunchKernelEx\b", r"\bCUtensorMap\w*",
                 r"\bcuTensorMapEncode\w*", r"#\s*include\s*[<\"]cuda/(?:pipeline|barrier)")),
    RiskRule("WMMA_MMA", "high", "WMMA / mma.h warp matrix types are not in the HIP kernel language",
             "port to rocWMMA (wave64 fragment layouts) or MFMA builtins", f"{_HIP_DOC} L2058-2090",
             _rx(r"#\s*include\s*[<\"]mma\.h", r"\bnvcuda::wmma\b", r"\bwmma::", r"\bmma_sync\s*\(",
                 r"\busing\s+namespace\s+nvcuda\b")),
    RiskRule("CUTLASS_CUTE", "high", "CUTLASS / CuTe / libcu++ PTX wrappers are NVIDIA-only",
             "use composable_kernel or hipBLASLt", "Dao-AILab/flash-attention@0251105a setup.py (ROCm uses CK, not CUTLASS)",
             _rx(r"\bcutlass::", r"\bcute::", r"#\s*include\s*[<\"](?:cutlass|cute)/")),
    RiskRule("CUDA_ARCH_GATE", "med", "feature gate on __CUDA_ARCH__ / compute capability: undefined under HIP-Clang; MI300X reports 9.4",
             "gate on __HIP_DEVICE_COMPILE__ / __gfx942__ or on features, not on an NVIDIA version",
             f"{_GUIDE} L148-198; {_ARCH}",
             _rx(r"\b__CUDA_ARCH__\b", r"\b__CUDA_ARCH_LIST__\b", r"\.major\s*[<>=!]=?\s*\d", r"\bComputeCapability\w*",
                 r"\b__CUDACC_VER_MAJOR__\b", r"\b__NVCC__\b")),
    RiskRule("BF16_TYPES", "med", "bf16 types and header differ: hip_bf16.h needs ROCm >= 6; legacy hip_bfloat16 is another type",
             "use __hip_bfloat16 from hip/hip_bf16.h (ROCm >= 6) and check each intrinsic exists",
             f"{_BNB}; {_LLMC}; measured: hipcc 5.2 'cuda_bf16.h file not found'",
             _rx(r"\b(?:__nv_bfloat162?|nv_bfloat162?|__hip_bfloat162?|hip_bfloat16)\b", r"\b(?:cuda|hip)_bf16\.h",
                 r"\bhip_bfloat16\.h", r"\b__float2bfloat16\w*", r"\b__bfloat162float\b")),
    RiskRule("FP8_TYPES", "high", "FP8: gfx942 uses FNUZ encodings (e4m3 max 240), not OCP E4M3FN (max 448)",
             "use __hip_fp8_e4m3_fnuz and rescale; re-derive amax/scale constants",
             "ROCm/ROCm@e396b489 docs/reference/precision-support.rst L65-113; HIPIFY issue #1617",
             _rx(r"\b__nv_fp8\w*", r"\bcuda_fp8\.h", r"\b__NV_E4M3\b", r"\b__NV_E5M2\b", r"\b__hip_fp8\w*", r"\bhip_fp8\.h",
                 r"(?i)\be4m3fn\b")),
    RiskRule("HALF2_XY", "low", "half2 .x/.y member access: HIP defines the members differently",
             "use __low2half / __high2half (or a reinterpret_cast, as hipify-clang does)",
             "ROCm/HIPIFY@014177bc src/HipifyAction.cpp:2872", _half2_xy),
    RiskRule("DYN_SMEM_GT_64K", "high", "shared memory beyond 64 KiB (or opt-in > 48 KB); MI300X LDS is 64 KiB per workgroup",
             "shrink tiles to fit 64 KiB; carveout/bank config calls are no-ops on AMD", f"{_ARCH}", _dyn_smem),
    RiskRule("LAUNCH_BOUNDS_2ARG", "med", "2nd __launch_bounds__ argument means min blocks/SM in CUDA but min warps per EU in HIP",
             "convert the second argument (or drop it); a 3rd argument is unsupported", f"{_HIP_DOC} L2152-2212",
             _launch_bounds),
    RiskRule("EXTERN_SHARED", "low", "dynamic shared memory: several extern __shared__ arrays alias one base",
             "use one extern __shared__ buffer (or HIP_DYNAMIC_SHARED) and carve it explicitly",
             "ROCm/HIP@c5e11fca docs/how-to/faq.md L309; " + _HECB, _rx(r"\bextern\s+__shared__\b", r"\bHIP_DYNAMIC_SHARED\b")),
    RiskRule("CACHE_HINT_INTRINSICS", "low", "PTX cache-hint load/store intrinsics: some missing in HIP, semantics differ",
             "use plain loads or __builtin_nontemporal_load/store", f"{_LLMC} amd_common.cuh",
             _rx(r"\b__(?:ldcg|ldca|ldcs|ldlu|ldcv|stwb|stcg|stcs|stwt)\s*\(")),
    RiskRule("TEXTURE_REF", "med", "texture references (removed in CUDA 12, deprecated in HIP) or surface functions (unsupported)",
             "move to texture objects or plain loads", f"{_HIP_DOC} L1440-1448; {_GUIDE} L497-506",
             _rx(r"\btexture\s*<", r"\bsurface\s*<", r"\b(?:cuda|hip)BindTexture\w*", r"\b(?:cuda|hip)UnbindTexture\b",
                 r"\btextureReference\b", r"\bsurf[123]D\w*\s*\(", r"\btex[123]D\s*\(\s*\w+\s*,")),
    RiskRule("TRAP_PRINTF", "low", "trap: on HIP abort()/__trap end the whole application, not just the dispatch; __prof_trigger unsupported",
             "report errors through a flag in memory instead of trapping", f"{_HIP_DOC} L2103, L2122-2126",
             _rx(r"\b__trap\s*\(", r"\b__brkpt\s*\(", r"\b__prof_trigger\s*\(")),
    RiskRule("COOP_GROUPS_ADV", "med", "cooperative-groups extras (reduce/scan/memcpy_async/partitions/clusters) are not in HIP; tiled_partition<32> is half a wave",
             "use the supported CG subset; size tiles by warpSize", f"{_HIP_DOC} L1944-2056",
             _rx(r"\b(?:cg|cooperative_groups)::(?:reduce|inclusive_scan|exclusive_scan|memcpy_async|wait|wait_prior|"
                 r"labeled_partition|binary_partition|this_cluster|cluster_group|invoke_one)\b",
                 r"#\s*include\s*[<\"]cooperative_groups/", r"\bthread_block_tile\s*<\s*32\s*>", r"tiled_partition\s*<\s*32\s*>")),
    RiskRule("CUB_THRUST", "med", "CUB/CCCL beyond cub/cub.cuh has no mapping; hipCUB's WarpReduce defaults to 64 lanes on AMD",
             "include hipcub/hipcub.hpp; replace cuda::std / cuda:: functors; pass the logical warp size explicitly",
             f"HIPIFY src/CUDA2HIP.cpp include map; {_BNB}",
             _rx(r"#\s*include\s*[<\"]cub/(?!cub\.cuh)", r"#\s*include\s*[<\"]cuda/", r"\bcuda::std::", r"\bcuda::(?:maximum|minimum)\b",
                 r"\b(?:hip)?cub::Warp(?:Reduce|Scan)\b", r"\bCCCL_VERSION\b")),
    RiskRule("CUBLASLT", "med", "cuBLASLt -> hipBLASLt: attribute, epilogue and pointer-mode coverage differ",
             "check each matmul-desc attribute and epilogue against hipBLASLt's list", f"{_LLMC} matmul.cuh; {_BNB}",
             _rx(r"\bcublasLt\w*", r"\bCUBLASLT_\w+", r"\bhipblasLt\w*", r"\bHIPBLASLT_\w+", r"\bhipblaslt\.h")),
    RiskRule("NVTX", "low", "NVTX ranges: HIP maps them to roctx (roctracer / rocprofiler-sdk), hipify does not",
             "use roctxRangePushA/Pop or compile the ranges out", f"{_LLMC} amd_common.cuh nvtx no-ops",
             _rx(r"\bnvtx\w*", r"\bnvToolsExt\w*")),
    RiskRule("GRAPH_CAPTURE", "low", "CUDA graphs / stream capture: some node types and flags are experimental or unsupported in HIP",
             "test the captured graph on ROCm; translate with --experimental where hipify asks",
             "HIPIFY bin/hipify-perl experimental_funcs; tests/unit_tests/graph/simple_mechs.cu",
             _rx(r"\b(?:cuda|hip)Graph\w*", r"\b(?:cuda|hip)Stream(?:Begin|End)Capture\w*")),
    RiskRule("HIP_HAS_ATOMIC", "high", "a float/double overload of atomicMin/atomicMax/atomicAdd defined by the project: HIP "
             "already defines it (amd_hip_atomic.h), so hipcc reports a redefinition",
             "delete the project's version on AMD (#if !defined(__HIP_PLATFORM_AMD__) around it) and use HIP's",
             f"ROCm/HIP amd_detail/amd_hip_atomic.h (atomicMin(float*, float), atomicMax(double*, double)); "
             f"measured: Debian hipcc 5.2 'redefinition of atomicMin'; {_HECB} (lebesgue: the HIP port drops its "
             "atomicMax(double*))",
             _rx(r"^\s*(?:(?:static|inline|__device__|__forceinline__|__host__)\s+)*(?:float|double)\s+"
                 r"atomic(?:Min|Max|Add)\s*\(\s*(?:float|double)\s*\*")),
    RiskRule("HIP_VECTOR_OPERATOR", "high", "an arithmetic operator defined on a CUDA vector type (helper_math.h style): "
             "HIP's vector types already define it, so each use becomes ambiguous under hipcc",
             "drop these operators on AMD (#if !defined(__HIP_PLATFORM_AMD__) around them): HIP_vector_type has "
             "+, -, *, / and their assignments; keep only those it lacks (dot, cross, mixed scalar forms)",
             f"ROCm/HIP amd_detail/amd_hip_vector_types.h (HIP_vector_type::operator+= ...); measured: Debian hipcc 5.2 "
             f"\"use of overloaded operator '+=' is ambiguous\"; {_HECB} (boxfilter: the HIP port drops helper_math.h)",
             _rx(rf"\boperator\s*(?:[-+*/]=?)\s*\(\s*(?:const\s+)?{_VEC}\s*&?\s*\w*\s*,\s*(?:const\s+)?{_VEC}\b")),
    RiskRule("DIM3_FROM_UINT3", "high", "a dim3 assigned a uint3: CUDA's dim3 converts from uint3, HIP's does not "
             "(no viable overloaded '=')", "write dim3(x, y, z) instead of make_uint3(x, y, z)",
             "ROCm/HIP hip_runtime_api.h struct dim3 (constructors from three uint32_t only); measured: Debian hipcc "
             "5.2 \"no viable overloaded '='\"", _dim3_from_uint3),
    RiskRule("DRIVER_JIT", "med", "runtime compilation / PTX-cubin loading: hiprtc produces AMDGPU code objects; embedded PTX must be rewritten",
             "compile the kernel source with hiprtc for gfx942; drop embedded PTX", "HIPIFY src/CUDA2HIP_RTC_API_functions.cpp",
             _rx(r"\bnvrtc\w*", r"\bhiprtc\w*", r"\b(?:cu|hip)ModuleLoad\w*", r"\bcuLink\w*", r"\bnvJitLink\w*")),
)
