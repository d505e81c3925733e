"""What the target ROCm/HIP version means for a CUDA name, beyond HIPIFY's tables.

HIPIFY's tables (ROCm 6.3) mark some names unsupported that current ROCm has under the CUDA name itself: the
``*_sync`` warp builtins (since HIP 6.2, opt-in through ``HIP_ENABLE_WARP_SYNC_BUILTINS`` until 7.0, on by
default from 7.0) and the bf16 conversions of ``hip/hip_bf16.h`` (ROCm 6.0). ``fact(name)`` gives those;
``target_version(explicit, doctor)`` picks the version to check against and says where it came from.

A few renames the tables get wrong for today's ROCm are here too (``RENAMES``, ``HEADER_PATHS``), each with
the human port or AMD document that shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hipwizard.port.translation.tables import load_tables, parse_version

_WARP_SYNC_DOC = "ROCm/HIP@c5e11fca docs/reference/kernel_language.rst L1832-1837 (warp sync builtins, 64-bit masks)"
_BF16_DOC = "https://rocm.docs.amd.com/projects/HIP/en/develop/doxygen/html/hip__bf16_8h.html"


@dataclass(frozen=True)
class VersionFact:
    """A CUDA name HIP has under the same name from ``since``; before ``opt_in_until`` only with ``define``."""

    name: str
    since: str
    header: str = ""
    opt_in_until: str = ""
    define: str = ""
    source: str = ""


_WARP_SYNC = ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
              "__all_sync", "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
              "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync")
_BF16_NAME = re.compile(r"^__(?:\w*bfloat16\w*|\w+2bfloat162?\w*|bfloat162\w+|h\w*_bf16\w*)$")


def fact(name: str) -> VersionFact | None:
    """The version fact for ``name``, if any."""
    if name in _WARP_SYNC:
        return VersionFact(name, "6.2", "hip/hip_runtime.h", "7.0", "HIP_ENABLE_WARP_SYNC_BUILTINS", _WARP_SYNC_DOC)
    if _BF16_NAME.match(name) and name not in ("__nv_bfloat16", "__nv_bfloat162"):
        return VersionFact(name, "6.0", "hip/hip_bf16.h", source=_BF16_DOC)
    return None


@lru_cache(maxsize=1)
def newest_known() -> str:
    """The newest HIP version HIPIFY's tables know (the default target), e.g. '6.3'."""
    best: tuple[int, ...] = (0, 0, 0)
    for row in load_tables()._rows.values():
        v = parse_version(row[5])
        if v and v > best:
            best = v
    return f"{best[0]}.{best[1]}"


@dataclass(frozen=True)
class Target:
    """The ROCm/HIP version a translation is checked against, and where that came from."""

    version: str
    source: str  # "--hip-version", "doctor", "given" (one of the two) or "default (newest ROCm in HIPIFY's tables)"

    def to_dict(self) -> dict:
        return {"hip_version": self.version, "source": self.source}

    def describe(self) -> str:
        return f"ROCm/HIP {self.version} ({self.source})"


def target_version(explicit: str | None = None, doctor: str | None = None, *, explicit_source: str = "--hip-version",
                   found: tuple[str, str] | None = None) -> Target:
    """``explicit`` wins, then the doctor's finding, then ``found`` (the version of the hipcc on PATH and its path,
    ``hipcc_version``), else the newest version the tables know."""
    if explicit:
        return Target(explicit, explicit_source)
    if doctor:
        return Target(doctor, "doctor")
    if found:
        return Target(found[0], f"the hipcc found at {found[1]}; no doctor report")
    return Target(newest_known(), "default (newest ROCm in HIPIFY's tables; no doctor report, no hipcc found)")


_HIPCC_VERSION = re.compile(r"^\s*HIP version\s*:\s*(\d+\.\d+)", re.IGNORECASE | re.MULTILINE)


def hipcc_version(runner) -> tuple[str, str] | None:
    """(X.Y, path) of the hipcc ``runner`` finds, from ``hipcc --version``'s "HIP version: X.Y..." line (Debian's
    hipcc 5.2 prints "HIP version: 5.2.21153-0"); None without a hipcc or that line."""
    path = runner.which("hipcc")
    if path is None:
        return None
    res = runner.run([path, "--version"], timeout=30.0)
    m = _HIPCC_VERSION.search((res.stdout or "") + "\n" + (res.stderr or ""))
    return (m.group(1), path) if m else None


def version_message(f: VersionFact, target: str) -> tuple[str, str] | None:
    """(diagnostic kind, message) for ``f`` on ``target``; None when it simply works there."""
    t = parse_version(target)
    if t is None:
        return None
    if t < (parse_version(f.since) or (0,)):
        return "too_new", f"{f.name} needs ROCm >= {f.since} (you target {target})"
    if f.opt_in_until and t < (parse_version(f.opt_in_until) or (0,)):
        return "opt_in", (f"{f.name} is opt-in before ROCm {f.opt_in_until}: define {f.define} before including "
                          f"{f.header} (you target {target})")
    return None


# Names whose HIP spelling the tables give differently from what today's ROCm ports use.
# cudaHostAlloc -> hipHostMalloc: HeCBench's human ports (e.g. src/logic-rewrite-hip, src/mallocFree-hip).
RENAMES = {"cudaHostAlloc": "hipHostMalloc"}
# Renames that hold from a ROCm version on: {CUDA name: (since, HIP name)}. HIPIFY maps cuda_bf16.h to
# hip/hip_bf16.h but __nv_bfloat16 to the legacy hip_bfloat16 (hip/hip_bfloat16.h), a type hip_bf16.h does not
# declare; hip_bf16.h (ROCm >= 6.0) has __hip_bfloat16 / __hip_bfloat162, which HeCBench's human ports use
# (in-sample: src/fma-hip, src/layernorm-hip ...; rocm.docs.amd.com HIP "hip_bf16.h" reference).
VERSIONED_RENAMES = {"__nv_bfloat16": ("6.0", "__hip_bfloat16"), "__nv_bfloat162": ("6.0", "__hip_bfloat162"),
                     "nv_bfloat16": ("6.0", "__hip_bfloat16"), "nv_bfloat162": ("6.0", "__hip_bfloat162")}
# cuSOLVER takes cuBLAS's enums (cublasFillMode_t...); hipSOLVER before 2.0 (ROCm 6.0) has its own enum types,
# which a HIPBLAS_* constant does not convert to in C++ (hipSOLVER CHANGELOG 2.0.0: "hipsolverFillMode_t is now an
# alias of hipblasFillMode_t"). The HIPSOLVER_* names build on every hipSOLVER; HeCBench src/determinant-hip passes
# HIPSOLVER_FILL_MODE_LOWER to hipsolverDnSpotrf. {CUDA name: the name inside a cusolver* call's arguments}
SOLVER_ENUMS = {f"CUBLAS_{k}": f"HIPSOLVER_{k}" for k in (
    "OP_N", "OP_T", "OP_C", "FILL_MODE_UPPER", "FILL_MODE_LOWER", "SIDE_LEFT", "SIDE_RIGHT")}
# Under --roc a file that calls rocBLAS/rocSPARSE/rocSOLVER passes complex values as rocBLAS's own types: rocBLAS's
# API takes rocblas_float_complex* / rocblas_double_complex* (rocBLAS docs "rocblas-types.h", Data types), which a
# hipFloatComplex* does not convert to. HIPIFY's tables have no ROC column for cuComplex; its unit tests
# (tests/unit_tests/synthetic/libraries/cublas2rocblas.cu, cusparse2rocsparse.cu) expect these names.
ROC_COMPLEX = {"cuComplex": "rocblas_float_complex", "cuFloatComplex": "rocblas_float_complex",
               "cuDoubleComplex": "rocblas_double_complex"}
# rocBLAS's half and bfloat16 (rocblas_half, rocblas_bfloat16: same rocblas-types.h) likewise, but only in a file with
# no device code: a kernel's __half / __hip_bfloat16 arithmetic and intrinsics have no rocblas_* counterpart.
ROC_HOST_TYPES = {"__half": "rocblas_half", "__nv_bfloat16": "rocblas_bfloat16", "nv_bfloat16": "rocblas_bfloat16"}
ROC_LIBRARY_USE = re.compile(r"\b(?:cublas|cusparse|cusolver)\w*", re.IGNORECASE)
# Library headers moved into per-library folders (the flat ones are deprecated in ROCm 6 and gone in 7):
# HeCBench src/blas-gemm-hip/main.cu '#include <hipblas/hipblas.h>'; rocm.docs.amd.com/projects/hipBLAS
# "hipblas.h ... deprecated, use hipblas/hipblas.h".
HEADER_PATHS = {"hipblas.h": "hipblas/hipblas.h", "hipsparse.h": "hipsparse/hipsparse.h",
                "hipsolver.h": "hipsolver/hipsolver.h", "rocblas.h": "rocblas/rocblas.h",
                "rocsparse.h": "rocsparse/rocsparse.h", "hipblaslt.h": "hipblaslt/hipblaslt.h",
                "nccl.h": "rccl/rccl.h"}


# Argument rules (the ones hipify applies after renaming): HIP wants symbols wrapped in HIP_SYMBOL and
# kernel pointers passed as const void*.
SYMBOL_ARG = {
    "hipMemcpyToSymbol": 0, "hipMemcpyToSymbolAsync": 0,
    "hipGetSymbolAddress": 1, "hipGetSymbolSize": 1, "hipMemcpyFromSymbol": 1, "hipMemcpyFromSymbolAsync": 1,
    "hipGetTextureReference": 1, "hipGraphMemcpyNodeSetParamsToSymbol": 1,
    "hipGraphExecMemcpyNodeSetParamsToSymbol": 2, "hipGraphMemcpyNodeSetParamsFromSymbol": 2,
    # HIP's hip_runtime_api.h: (pGraphNode, graph, deps, numDeps, symbol, ...) / (..., dst, symbol, ...)
    "hipGraphAddMemcpyNodeToSymbol": 4, "hipGraphAddMemcpyNodeFromSymbol": 5,
    "hipGraphExecMemcpyNodeSetParamsFromSymbol": 3,
}
# Arguments CUDA has and HIP's signature lacks: {HIP name: index dropped}. cuOccupancyMaxPotentialBlockSize[WithFlags]
# takes a CUoccupancyB2DSize callback (dynamic shared memory per block size) as its 4th argument; HIP's
# hipModuleOccupancyMaxPotentialBlockSize[WithFlags](gridSize, blockSize, f, dynSharedMemPerBlk, blockSizeLimit[, flags])
# has none (ROCm/HIP include/hip/hip_runtime_api.h). Dropping it is exact only when it is 0/NULL/nullptr.
DROPPED_ARG = {"hipModuleOccupancyMaxPotentialBlockSize": 3, "hipModuleOccupancyMaxPotentialBlockSizeWithFlags": 3}
FUNC_PTR_ARG = {
    "hipFuncSetAttribute": 0, "hipFuncSetCacheConfig": 0, "hipFuncSetSharedMemConfig": 0,
    "hipLaunchCooperativeKernel": 0, "hipLaunchKernel": 0, "hipFuncGetAttributes": 1,
}
