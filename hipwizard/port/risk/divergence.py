"""Risk rules learned where dual-target projects really diverge for AMD (issue 32).

``benchmarks/amd_divergence.py`` takes projects that build for both vendors, removes their AMD branches with
``unifdef`` and looks at what the humans had to guard. Kinds seen there that no other rule covered:

- ``GRID_32BIT_THREADS``: one thread per item with a 64-bit or deduced index and no grid-stride loop. A HIP
  launch holds at most 2^32 - 1 threads in all (the AQL dispatch packet counts the grid in work-items, 32 bits
  per dimension), where CUDA takes (2^31 - 1) x 1024; FBGEMM turns such kernels into grid-stride loops on ROCm
  (``#ifdef USE_ROCM for (...; index += blockDim.x * gridDim.x)``, the early ``return`` a ``continue``).
- ``SMEM_OPTIN_QUERY``: the opt-in shared-memory limit (``cudaDevAttrMaxSharedMemoryPerBlockOptin``,
  ``sharedMemPerBlockOptin``) or the per-SM one (``sharedMemPerMultiprocessor``: apex's groupbn occupancy) sizes
  tiles on NVIDIA (up to 227 KB a block); MI300X has 64 KiB of LDS and the projects read the plain per-block limit
  on AMD.
- ``DLPACK_DEVICE``: DLPack tags AMD GPU memory ``kDLROCM`` / ``kDLROCMHost``, not ``kDLCUDA``.
- ``CUB_WARP_THREADS``: CUB's warp-width constants (``CUB_WARP_THREADS(0)``, ``CUB_PTX_WARP_THREADS``) are 32;
  hipCUB's ``HIPCUB_WARP_THREADS`` is the wave (64 on gfx942) and, from ROCm 7, no longer a compile-time constant
  (mamba keeps its own constant on ROCm).
- ``VENDOR_ALIAS``: a project's own alias of a CUDA library function or constant HIP lacks (jaxlib's vendor.h:
  ``#define gpudnnRNNForward cudnnRNNForward``) hides the missing API from
  every other rule at the call sites; jaxlib guards those calls with ``#ifdef JAX_GPU_HIP`` (MIOpen's RNN calls
  take other arguments, rocSOLVER stands in for cuSOLVER's gesvdp and sparse solvers). The alias's uses are
  flagged, in its own file by the rule and in the files that use it by ``tree.flag_tree``.
- ``FP8_OCP_DTYPE``: PyTorch's OCP FP8 dtype (``at::kFloat8_e4m3fn``, ``c10::Float8_e4m3fn``) chosen as the FP8
  type; gfx942 (MI300X) computes in the FNUZ encodings (``Float8_e4m3fnuz``: another bias, max 240 not 448), gfx950
  in OCP, so the projects pick the dtype per arch on ROCm (FBGEMM's ``fp8_e4m3_t``, ``getNFP8ScalarType``).
- ``DEPENDENT_TEMPLATE_CALL``: a member template of a dependent type called without the ``template`` keyword
  (``Sums<THREADS, N>::dispatch<CTA>(...)`` inside a template whose parameters are ``THREADS``, ``N``). The C++
  standard needs ``::template dispatch<CTA>``; nvcc's front end takes it without, HIP-Clang does not (``use
  'template' keyword to treat 'dispatch' as a dependent template name``), so apex's ROCm fork writes each such
  call twice (groupbn's ``#ifdef USE_ROCM ...::template dispatch<THREADS_PER_CTA>(``, 32 guarded groups).
- ``CUDNN_MIOPEN``: a cuDNN call HIPIFY renames to MIOpen's (``cudnnCreateTensorDescriptor`` ->
  ``miopenCreateTensorDescriptor``): the name has a counterpart, the call often does not (MIOpen's status enum,
  descriptor setters and batch-norm modes take other arguments), so the projects write the MIOpen call themselves
  behind a guard (apex's groupbn ``batch_norm.h``). cuDNN names with no MIOpen counterpart are ``LIBRARY_LEFTOVER``.
"""

from __future__ import annotations

import re

from hipwizard.port.risk.base import RiskRule, _rx
from hipwizard.port.risk.line_search import matching_lines
from hipwizard.port.translation.tables import load_tables

_FBGEMM = "pytorch/FBGEMM@71d6f8b2 fbgemm_gpu/src"
_MAMBA = "state-spaces/mamba@e9594ce1 csrc/selective_scan/reverse_scan.cuh"
_JAX = "jax-ml/jax@cec06d11 jaxlib/gpu"
_APEX = "ROCm/apex@daed8525 apex/contrib/csrc/groupbn"

_GLOBAL = re.compile(r"\b__global__\b")
# idx = blockIdx.x * blockDim.x + threadIdx.x (either order, any axis, casts allowed), declared or assigned
_INDEX = re.compile(r"^\s*(?:const\s+)?(?P<type>[A-Za-z_][\w:<>]*(?:\s+(?:long|int))*)?\s*(?P<name>\w+)\s*=\s*"
                    r"(?P<expr>[^;]*\bblockIdx\.[xyz]\b[^;]*\bblockDim\.[xyz]\b[^;]*|"
                    r"[^;]*\bblockDim\.[xyz]\b[^;]*\bblockIdx\.[xyz]\b[^;]*);")
_NARROW = re.compile(r"^(?:int|unsigned|unsigned\s+int|int32_t|uint32_t|uint|short|unsigned\s+short)$")
_RETURN = re.compile(r"\breturn\s*;")
# a project's alias of one function or constant: #define A B (masked code lines). Type aliases (typedef, using,
# a *_t name) are left out: the project picks the AMD type in that one place (TransformerEngine's common.h:
# using fp8e4m3 = __nv_fp8_e4m3 / hip_f8<...>) and the uses need no change; a call has nothing to point to
_ALIAS = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<d>\w+)[ \t]+(?P<dt>\w+)[ \t]*$", re.MULTILINE)
GRID_LOOP_END = True  # also flag the kernel's last line, where the grid-stride loop closes


def _kernel_bodies(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each ``__global__`` function's body (braces counted on masked code)."""
    out = []
    n, i = len(lines), 0
    while i < n:
        if not _GLOBAL.search(lines[i]):
            i += 1
            continue
        depth, start, j, done = 0, None, i, False
        while j < n and not done:
            for ch in lines[j]:
                if start is None:
                    if ch == ";":  # a declaration, no body
                        done = True
                        break
                    if ch == "{":
                        start, depth = j, 1
                elif ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        done = True
                        break
            if not done:
                j += 1
        if start is not None:
            out.append((start, min(j, n - 1)))
        i = j + 1
    return out


def _grid_32bit(lines: list[str]) -> list[int]:
    hits: list[int] = []
    for start, end in _kernel_bodies(lines):
        body = range(start, end + 1)
        if any("gridDim" in lines[k] for k in body):
            continue  # already a grid-stride loop (or sized by the grid)
        for k in body:
            line = lines[k]
            if line.rstrip().endswith("=") and k + 1 <= end:  # the index's expression on the next line
                line = line.rstrip() + " " + lines[k + 1].strip()
            m = _INDEX.match(line)
            if not m or "threadIdx" not in m.group("expr") or line.lstrip().startswith("for"):
                continue
            kind, expr = (m.group("type") or "").strip(), m.group("expr")
            one_d = not re.search(r"\b(?:blockDim|threadIdx)\.[yz]\b", expr)
            if kind and _NARROW.match(kind) and one_d and "int64" not in expr and "long" not in expr:
                continue  # a 32-bit index of a 1-D grid: the CUDA code cannot go past 2^32 threads either
            hits.append(k)
            # the early returns (they become continue) and where the loop would close, each unless a line already
            # flagged is within 3 lines of it (one place in the review)
            for r in [*(r for r in range(k + 1, end + 1) if _RETURN.search(lines[r])), *([end] if GRID_LOOP_END else [])]:
                if r - hits[-1] > 3:
                    hits.append(r)
            break
    return sorted(set(hits))


def lacking_aliases(text: str) -> dict[str, tuple[str, int]]:
    """{alias: (the CUDA name it stands for, its 0-based line)} for the aliases in ``text`` (masked code) of CUDA
    names HIP has no counterpart for (HIPIFY's tables: unsupported, or cuDNN without a MIOpen name)."""
    if "define" not in text:
        return {}
    tables = load_tables()
    out: dict[str, tuple[str, int]] = {}
    for m in _ALIAS.finditer(text):
        alias, target = m.group("d"), m.group("dt")
        row = tables.get(target) if alias != target and not target.endswith("_t") else None
        # a device builtin's alias (#define SHFL_DOWN __shfl_down_sync) is a shim: its AMD branch is written once,
        # where it is defined (SHFL_SHIM's place), and its uses need no change (apex: 19 uses, none guarded)
        if row is not None and not row.supported and row.family != "device":
            out.setdefault(alias, (target, text.count("\n", 0, m.start())))
    return out


def alias_uses(lines: list[str], aliases: dict[str, tuple[str, int]], own: bool) -> list[tuple[int, str]]:
    """(0-based line, alias) of each line that uses one of ``aliases``; ``own``: the aliases are this file's
    (their definition lines are not uses)."""
    if not aliases:
        return []
    text = "\n".join(lines)
    rx = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(aliases, key=len, reverse=True))))
    defined = {at for _, at in aliases.values()} if own else set()
    out: dict[int, str] = {}
    for m in rx.finditer(text):
        k = text.count("\n", 0, m.start())
        if k not in defined:
            out.setdefault(k, m.group(0))
    return sorted(out.items())


def _own_alias_uses(lines: list[str]) -> list[int]:
    text = getattr(lines, "text", None) or "\n".join(lines)
    return [k for k, _ in alias_uses(lines, lacking_aliases(text), own=True)]


# X<args>::name<...>( with no ``template`` after the ``::`` (masked code: comments and strings are blank)
_MEMBER_TEMPLATE_CALL = re.compile(r"(?<![\w:])(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*\s*<(?P<args>[^;{}()<>]*)>\s*::\s*"
                                   r"(?!template\b)[A-Za-z_]\w*\s*<[^;{}()=]*>\s*\(")
_TEMPLATE_HEAD = re.compile(r"\btemplate\s*<")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def template_parameters(text: str) -> set[str]:
    """The names the ``template <...>`` heads of ``text`` (masked code) declare: ``typename T``, ``int N = 4``,
    ``typename... Args`` give T, N, Args."""
    names: set[str] = set()
    for m in _TEMPLATE_HEAD.finditer(text):
        depth, k = 1, m.end()
        part: list[str] = []
        parts: list[str] = []
        while k < len(text) and depth:
            ch = text[k]
            if ch in "{;":  # no closing '>' before a body or a statement: not a template head (a '<' compare)
                break
            depth += (ch == "<") - (ch == ">")
            if depth == 1 and ch == ",":
                parts.append("".join(part))
                part = []
            elif depth:
                part.append(ch)
            k += 1
        parts.append("".join(part))
        for p in parts:
            found = _IDENT.findall(re.sub(r"<[^<>]*>", "", p.split("=")[0]))
            if len(found) >= 2:  # a kind (typename, class, int, ...) and a name; "template <>" declares none
                names.add(found[-1])
    return names


def _dependent_template_calls(lines: list[str]) -> list[int]:
    if not any("::" in line for line in lines):
        return []
    hits = matching_lines(_MEMBER_TEMPLATE_CALL, lines)
    if not hits:
        return []
    params = template_parameters(getattr(lines, "text", None) or "\n".join(lines))
    out = []
    for i in hits:
        for m in _MEMBER_TEMPLATE_CALL.finditer(lines[i]):
            if params & set(_IDENT.findall(m.group("args"))):  # the class depends on a template parameter
                out.append(i)
                break
    return out


_CUDNN_CALL = re.compile(r"\b(cudnn[A-Z]\w*)\s*\(")


def _cudnn_renamed(lines: list[str]) -> list[int]:
    hits = matching_lines(_CUDNN_CALL, lines)
    if not hits:
        return []
    tables = load_tables()
    out = []
    for i in hits:
        for name in _CUDNN_CALL.findall(lines[i]):
            row = tables.get(name)
            if row is not None and row.roc:  # MIOpen has a name for it (none: LIBRARY_LEFTOVER's)
                out.append(i)
                break
    return out


DIVERGENCE_RULES: tuple[RiskRule, ...] = (
    RiskRule("GRID_32BIT_THREADS", "med",
             "one thread per item with a 64-bit or deduced index and no grid-stride loop: a HIP launch holds at most "
             "2^32 - 1 threads in all (gridDim x blockDim), CUDA up to (2^31 - 1) x 1024",
             "loop over the items (for (i = first; i < n; i += blockDim.x * gridDim.x)), cap the grid, and turn "
             "the early return into continue",
             "HSA Platform System Architecture Specification 1.2 sec. 2.9.6 (kernel dispatch packet: grid_size_x, "
             f"32-bit work-items); ROCm/hip issue 2253; {_FBGEMM} (quantize_ops, sparse_ops, jagged_tensor_ops, "
             "split_embeddings_cache: '#ifdef USE_ROCM' grid-stride loops)",
             _grid_32bit),
    RiskRule("SMEM_OPTIN_QUERY", "med",
             "the opt-in shared-memory limit (up to 227 KB a block on Hopper) or the per-SM one (228 KB) sizes "
             "this; MI300X has 64 KiB of LDS per workgroup and per CU",
             "read the plain per-block limit on AMD (hipDeviceAttributeMaxSharedMemoryPerBlock / sharedMemPerBlock) "
             "and size tiles for 64 KiB",
             f"ROCm/ROCm@e396b489 docs/reference/gpu-arch-specs.rst (MI300X: LDS 64 KiB); {_FBGEMM} "
             "(sparse_ops/sparse_block_bucketize_features.cu, jagged_tensor_ops/common.cuh: '#ifndef "
             "__HIP_PLATFORM_AMD__ cudaDevAttrMaxSharedMemoryPerBlockOptin'); ROCm/apex@daed8525 "
             "apex/contrib/csrc/groupbn/cuda_utils.h ('#ifdef USE_ROCM' around sharedMemPerMultiprocessor)",
             _rx(r"\b(?:cudaDevAttr|hipDeviceAttribute)(?:Max)?SharedMem(?:ory)?PerBlockOptin\b",
                 r"\bsharedMemPerBlockOptin\b", r"\bsharedMemPerMultiprocessor\b",
                 r"\b(?:cudaDevAttr|hipDeviceAttribute)MaxSharedMemoryPerMultiprocessor\b")),
    RiskRule("DLPACK_DEVICE", "med",
             "DLPack device type kDLCUDA: AMD GPU memory is tagged kDLROCM (kDLROCMHost for pinned host memory)",
             "use kDLROCM / kDLROCMHost on AMD",
             f"dmlc/dlpack include/dlpack/dlpack.h (DLDeviceType: kDLROCM = 10, kDLROCMHost = 11); {_JAX}/"
             "py_client_gpu.cc ('#ifdef JAX_GPU_CUDA kDLCUDA #else kDLROCM')",
             _rx(r"\bkDLCUDA(?:Host|Managed)?\b")),
    RiskRule("CUB_WARP_THREADS", "med",
             "CUB's warp width (32) sizes this; hipCUB's HIPCUB_WARP_THREADS is the wave (64 on gfx942) and from "
             "ROCm 7 not a compile-time constant (rocprim::warp_size())",
             "size by the wave on AMD and keep a constexpr of your own where a constant is needed",
             f"{_MAMBA} ('#ifndef USE_ROCM #define WARP_THREADS CUB_WARP_THREADS(0) #else ... ROCm 7.0+: "
             "HIPCUB_WARP_THREADS is no longer constexpr'); ROCm/HIP@c5e11fca docs/reference/kernel_language.rst "
             "(warpSize)",
             _rx(r"\b(?:CUB|HIPCUB)_(?:PTX_)?WARP_THREADS\b", r"\b(?:CUB|HIPCUB)_LOG_WARP_THREADS\b")),
    RiskRule("FP8_OCP_DTYPE", "high",
             "PyTorch's OCP FP8 dtype (Float8_e4m3fn, max 448) is chosen here; MI300X (gfx942) computes FP8 in the "
             "FNUZ encodings (Float8_e4m3fnuz: exponent bias 8, max 240, no negative zero), gfx950 in OCP",
             "pick the dtype per arch on ROCm (at::kFloat8_e4m3fnuz on gfx942/gfx90a, e4m3fn on gfx950) and "
             "re-derive the scales and the 448 maximum from it",
             "ROCm/ROCm@e396b489 docs/reference/precision-support.rst (FP8: FNUZ on gfx942, OCP on gfx950); "
             f"{_FBGEMM.replace(' fbgemm_gpu/src', '')} fbgemm_gpu/include/fbgemm_gpu/utils/dispatch_macros.h "
             "('#if defined(USE_ROCM) using fp8_e4m3_t = at::Float8_e4m3fnuz'), embedding_common.h "
             "(getNFP8ScalarType, relabel_nfp8_for_dispatch)",
             _rx(r"\b(?:(?:at|c10)::)?(?:ScalarType::)?k?Float8_e4m3fn\b", r"\bfloat8_e4m3fn\b")),
    RiskRule("VENDOR_ALIAS", "high",
             "the project's alias of a CUDA library name HIP has no counterpart for (HIPIFY's tables): the alias "
             "hides the missing API at this call",
             "give the AMD build its own call here (MIOpen's RNN calls take other arguments; rocSOLVER stands in "
             "for cuSOLVER's gesvdp and sparse solvers) or leave the feature out on AMD behind a guard",
             f"{_JAX}/vendor.h (gpudnn*/gpusolver* aliases of cuDNN/cuSOLVER names) and {_JAX}/rnn_kernels.cc, "
             "solver_kernels_ffi.cc ('#ifdef JAX_GPU_HIP' around the aliased calls); ROCm/HIPIFY@014177bc "
             "docs/tables (unsupported names)",
             _own_alias_uses),
    RiskRule("DEPENDENT_TEMPLATE_CALL", "high",
             "a member template of a type that depends on a template parameter is called without the 'template' "
             "keyword: nvcc accepts it, HIP-Clang stops ('use 'template' keyword to treat ... as a dependent "
             "template name')",
             "write X<...>::template name<...>(...) (valid C++ for both compilers)",
             "ISO C++17 [temp.names]/4 (a member template of a dependent type needs the 'template' keyword); clang "
             f"diagnostic err_template_kw_missing; {_APEX}/nhwc_batch_norm_kernel.h ('#ifdef USE_ROCM "
             "ParallelSums<THREADS_PER_PIXEL, ELEMENTS_PER_LDG>::template dispatch<THREADS_PER_CTA>(')",
             _dependent_template_calls),
    RiskRule("CUDNN_MIOPEN", "med",
             "a cuDNN call HIPIFY renames to MIOpen's: the name has a counterpart, the call may not (MIOpen's "
             "status values, descriptor setters, batch-norm and convolution modes take other arguments)",
             "check the MIOpen call's signature and semantics against this one and write the MIOpen call where "
             "they differ",
             "ROCm/HIPIFY@014177bc docs/tables/CUDNN_API_supported_by_MIOPEN.md; "
             f"{_APEX}/batch_norm.h ('#ifdef USE_ROCM miopenCreateTensorDescriptor ... #else "
             "cudnnCreateTensorDescriptor')",
             _cudnn_renamed),
    RiskRule("CUDA_VERSION_VALUE", "med",
             "the CUDA runtime / driver version read as a number in code (cudaRuntimeGetVersion, "
             "cudaDriverGetVersion, CUDART_VERSION): HIP's runtime reports HIP_VERSION's encoding (major * 10^7 + "
             "minor * 10^5 + patch), not CUDA's (major * 1000 + minor * 10), so a CUDA-style decode or comparison "
             "is wrong, and CUDART_VERSION is not defined",
             "read hipRuntimeGetVersion / HIP_VERSION_MAJOR and _MINOR (hip/hip_version.h) on AMD and decode them "
             "as HIP does",
             "ROCm/HIP@c5e11fca docs/how-to/hip_porting_guide.md (HIP_VERSION = HIP_VERSION_MAJOR * 10000000 + "
             "HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH); open-mmlab/mmcv@a8073c74 mmcv/ops/csrc/pytorch/"
             "info.cpp ('#ifdef MMCV_WITH_HIP hipRuntimeGetVersion ... #else return CUDART_VERSION', a CUDA-style "
             "printCudaStyleVersion only on CUDA)",
             _rx(r"\bcuda(?:Runtime|Driver)GetVersion\s*\(", r"^(?!\s*#).*\bCUDART_VERSION\b")),
)
