"""The float64 oracle: a precision-lifted twin of the original source, and the reverse-mapping headers.

``lift(path)`` returns the source with every device function and kernel (``__global__``/``__device__``
definitions, and those of the project headers it includes with quotes, inlined once) computing in double:
``float``/``half``/``__nv_bfloat16``/``floatX`` and their vectors widened, single-precision math (``expf``,
``__expf``, ``rsqrtf``, ``__fdividef`` ...) replaced by the double functions, float literals (``1.0f``) made double,
half/bf16 conversions made identities. Host code is left as written (it is not called: the driver calls the
kernel). Built with nvcc and run on the reference machine, it is the reference the original and the port are both
measured against.

``reverse_headers(tables)`` writes, for an NVIDIA machine without HIP, ``hip/hip_runtime.h`` and friends: each
includes the CUDA header it replaces and ``#define``s the HIP names of HIPIFY's tables back to their CUDA names,
so the port's own source builds with nvcc unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path

from hipwizard.parity.kernels.source import masked, matching

_WIDEN = {"float": "double", "half": "double", "__half": "double", "__nv_bfloat16": "double", "nv_bfloat16": "double",
          "floatX": "double", "float2": "double2", "float4": "double4", "half2": "double2", "__half2": "double2",
          "__nv_bfloat162": "double2", "hip_bfloat16": "double", "__hip_bfloat16": "double"}
_MATH = {"expf": "exp", "__expf": "exp", "exp2f": "exp2", "logf": "log", "__logf": "log", "log2f": "log2",
         "sqrtf": "sqrt", "__fsqrt_rn": "sqrt", "rsqrtf": "rsqrt", "tanhf": "tanh", "fabsf": "fabs", "fmaxf": "fmax",
         "fminf": "fmin", "powf": "pow", "__powf": "pow", "sinf": "sin", "cosf": "cos", "__sinf": "sin",
         "__cosf": "cos", "erff": "erf", "erfcf": "erfc", "floorf": "floor", "ceilf": "ceil", "roundf": "round",
         "truncf": "trunc", "fmodf": "fmod", "log1pf": "log1p", "expm1f": "expm1", "tanf": "tan", "atanf": "atan",
         "coshf": "cosh", "sinhf": "sinh", "cbrtf": "cbrt", "hypotf": "hypot", "copysignf": "copysign",
         "make_float2": "make_double2", "make_float4": "make_double4", "__fmaf_rn": "fma", "fmaf": "fma",
         "__saturatef": "hw_saturate"}
_IDENTITY = ("__half2float", "__float2half", "__float2half_rn", "__bfloat162float", "__float2bfloat16",
             "__float2bfloat16_rn", "__low2float", "__high2float", "__int2float_rn", "__uint2float_rn")
_FDIV = re.compile(r"\b__fdividef\s*\(")
_FLOAT_LITERAL = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)[fF]\b")
_DEVICE_START = re.compile(r"\b__(?:global|device)__\b")
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', re.M)
PRELUDE = """// hipwizard float64 twin helpers
__host__ __device__ static inline double hw_saturate(double x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }
"""


def widened(type_text: str) -> str:
    """The twin's name for a buffer element type (double for every floating type)."""
    return _WIDEN.get(type_text, type_text)


_NOT_FUNCTION = re.compile(r"\b(?:struct|class|namespace|enum|union|extern\s*\"C\")\b|=\s*$")


def drop_launchers(text: str) -> str:
    """``text`` without ``main`` and the host functions that launch a kernel (or call one that does): in the twin
    the kernels take double buffers, and host code written for float buffers would not compile."""
    code = masked(text)
    defs = []  # (start, end, name, is_device)
    depth, i, last_stop = 0, 0, 0
    while i < len(code):
        c = code[i]
        if c == "{" and depth == 0:
            end = matching(code, i)
            if end == -1:
                break
            header = code[last_stop:i]
            hm = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:const\s*)?$", header.rstrip())
            if hm and not _NOT_FUNCTION.search(header):
                start = last_stop + len(header) - len(header.lstrip())
                defs.append((start, end + 1, hm.group(1), bool(_DEVICE_START.search(header))))
            elif _NOT_FUNCTION.search(header) and re.search(r"\bnamespace\b", header):
                last_stop = i + 1  # step into a namespace
                i += 1
                continue
            i = end + 1
            last_stop = i
            continue
        if c == ";" and depth == 0:
            last_stop = i + 1
        elif c == "\n" and code[last_stop:i].lstrip().startswith("#"):
            last_stop = i + 1
        i += 1
    kernels = {d[2] for d in defs if d[3]}
    drop = {"main"}
    host = [d for d in defs if not d[3]]
    changed = True
    while changed:
        changed = False
        for start, end, name, _ in host:
            if name in drop:
                continue
            body = code[start:end]
            if "<<<" in body or any(re.search(rf"\b{re.escape(n)}\b", body) for n in drop | kernels):
                drop.add(name)
                changed = True
    out, pos = [], 0
    for start, end, name, _ in host:
        if name in drop:
            out.append(text[pos:start])
            out.append(f"/* hipwizard twin: host function {name} left out */")
            pos = end
    out.append(text[pos:])
    return "".join(out)


def lift_text(text: str) -> str:
    """``text`` with every device function and kernel widened to double (host code unchanged)."""
    code = masked(text)
    spans: list[tuple[int, int]] = []
    for m in _DEVICE_START.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        if code[line_start:m.start()].lstrip().startswith("#"):
            continue
        paren = code.find("(", m.end())
        semi = code.find(";", m.end())
        if paren == -1 or (semi != -1 and semi < paren):
            continue
        close = matching(code, paren)
        if close == -1:
            continue
        brace = code.find("{", close)
        semi = code.find(";", close)
        if brace == -1 or (semi != -1 and semi < brace):
            continue
        end = matching(code, brace)
        if end == -1:
            continue
        start = _template_start(code, line_start)
        if spans and start < spans[-1][1]:
            continue
        spans.append((start, end + 1))
    for m in re.finditer(r"(?m)^[ \t]*(?:template\s*<[^>]*>\s*)?(?:struct|union)\b(?:[^;{()]|__align__\s*\([^)]*\)|alignas\s*\([^)]*\))*\{", code):
        end = matching(code, m.end() - 1)
        if end != -1 and not any(a <= m.start() < b for a, b in spans):
            spans.append((m.start(), end + 1))  # a struct of floats a device function builds (llm.c's SumMax)
    for m in re.finditer(r"(?m)^[ \t]*(?:typedef\b|using\s+\w+\s*=)[^;{]*;", code):
        if not any(a <= m.start() < b for a, b in spans):
            spans.append((m.start(), m.end()))
    spans.sort(key=lambda ab: (ab[0], -ab[1]))
    kept: list[tuple[int, int]] = []
    for a, b in spans:  # a span inside another (a member function inside a lifted struct) goes with it
        if kept and a < kept[-1][1]:
            continue
        kept.append((a, b))
    spans = kept
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        piece = code[start:end]
        if re.match(r"\s*(?:typedef|using)\b", piece):  # widen the aliased type, never the new name
            name = re.search(r"\busing\s+(\w+)", piece) or re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*;\s*$", piece)
            if name:
                cut = start + name.end(1)
                if piece.lstrip().startswith("using"):
                    out.append(text[start:cut] + _widen(text[cut:end], code[cut:end]))
                else:
                    keep = start + name.start(1)
                    out.append(_widen(text[start:keep], code[start:keep]) + text[keep:end])
                pos = end
                continue
        out.append(_widen(text[start:end], code[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _template_start(code: str, line_start: int) -> int:
    """The start of a ``template <...>`` line just above a definition, else ``line_start``."""
    prev_end = line_start - 1
    if prev_end <= 0:
        return line_start
    prev_start = code.rfind("\n", 0, prev_end) + 1
    if re.match(r"\s*template\s*<", code[prev_start:prev_end]):
        return prev_start
    return line_start


def _widen(text: str, code: str) -> str:
    """Type, math and literal replacements inside one definition, in code only (comments and strings kept)."""
    out, pos = [], 0
    for m in re.finditer(r"[A-Za-z_]\w*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fF]\b", code):
        word = m.group(0)
        rep = None
        if word in _WIDEN:
            rep = _WIDEN[word]
        elif word in _MATH:
            rep = _MATH[word]
        elif word in _IDENTITY:
            rep = "(double)"
        elif word == "__fdividef":
            rep = "hw_fdiv"
        elif _FLOAT_LITERAL.fullmatch(word):
            rep = word[:-1]
        if rep is not None:
            out.append(text[pos:m.start()])
            out.append(rep)
            pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def lift(path: Path, roots: list[Path], seen: set[Path] | None = None) -> str:
    """The twin of the source at ``path``: project headers it includes with quotes (found beside it or under
    ``roots``) inlined once and lifted; system and CUDA headers left as includes."""
    seen = set() if seen is None else seen
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    out, pos = [], 0
    for m in _QUOTED_INCLUDE.finditer(text):
        name = m.group(1)
        found = next((p for p in (d / name for d in [path.parent, *roots]) if p.is_file()), None)
        if found is None:
            continue
        out.append(text[pos:m.start()])
        resolved = found.resolve()
        if resolved not in seen:
            seen.add(resolved)
            out.append(f"// ---- {name} (lifted) ----\n{lift(resolved, roots, seen)}\n// ---- end {name} ----")
        pos = m.end()
    out.append(text[pos:])
    return lift_text(drop_launchers("".join(out))).replace("#pragma once", "")


def twin_source(path: Path, roots: list[Path]) -> str:
    """A whole twin file: the helpers, then the lifted source."""
    return ("#include <cmath>\n" + PRELUDE
            + "__host__ __device__ static inline double hw_fdiv(double a, double b) { return a / b; }\n"
            + f'#line 1 "{path}"\n' + lift(path, roots, {path.resolve()}))


# --- reverse mapping: HIP names back to CUDA on an NVIDIA machine ------------------------------------------------

_HEADER_GROUPS = {
    "hip/hip_runtime.h": ["cuda_runtime.h", "cuda.h", "cuda_fp16.h", "cuda_bf16.h"],
    "hip/hip_runtime_api.h": ["cuda_runtime_api.h"],
    "hip/hip_fp16.h": ["cuda_fp16.h"],
    "hip/hip_bf16.h": ["cuda_bf16.h"],
    "hip/hip_bfloat16.h": ["cuda_bf16.h"],
    "hip/hip_cooperative_groups.h": ["cooperative_groups.h"],
    "hip/hip_complex.h": ["cuComplex.h"],
    "hip/hip_vector_types.h": ["vector_types.h"],
    "hip/math_functions.h": ["math_functions.h"],
    "hipblas/hipblas.h": ["cublas_v2.h"],
    "hipblas.h": ["cublas_v2.h"],
    "hipblaslt/hipblaslt.h": ["cublasLt.h"],
    "hipblaslt.h": ["cublasLt.h"],
    "hiprand.h": ["curand.h"],
    "hiprand_kernel.h": ["curand_kernel.h"],
    "hiprand/hiprand.h": ["curand.h"],
    "hiprand/hiprand_kernel.h": ["curand_kernel.h"],
    "hipcub/hipcub.hpp": ["cub/cub.cuh"],
}
_NAME = re.compile(r"[A-Za-z_]\w*")
# HIP spellings a port uses that HIPIFY's tables do not list as a CUDA name's target (amd_hip_bf16.h's types)
_HIP_ONLY = [("__nv_bfloat16", "__hip_bfloat16"), ("__nv_bfloat162", "__hip_bfloat162"),
             ("__nv_bfloat16", "hip_bfloat16")]


def reverse_defines(pairs: list[tuple[str, str]]) -> str:
    """``#define HIP CUDA`` for each (cuda, hip) pair whose names differ (the first CUDA name per HIP name)."""
    lines, done = [], set()

    def preferred(pair: tuple[str, str]) -> int:  # the same spelling first (hipMalloc -> cudaMalloc, not cuMemAlloc)
        cuda, hip = pair
        if re.sub(r"^(__)?hip", r"\1cuda", hip) == cuda or hip.replace("HIP", "CUDA") == cuda:
            return 0
        if re.sub(r"^(__)?hip", r"\1cu", hip) == cuda or hip.replace("HIP", "CU") == cuda:
            return 1
        return 2

    for cuda, hip in sorted(pairs, key=preferred):
        if not hip or hip == cuda or hip in done or not _NAME.fullmatch(hip) or not _NAME.fullmatch(cuda):
            continue
        if not hip.lower().startswith(("hip", "__hip")) and not hip.startswith("HIP"):
            continue
        done.add(hip)
        lines.append(f"#ifndef {hip}\n#define {hip} {cuda}\n#endif")
    return "\n".join(lines)


def reverse_headers(dest: Path, pairs: list[tuple[str, str]]) -> list[Path]:
    """Write the reverse-mapping headers under ``dest`` (an include folder); the written paths."""
    written = []
    common = dest / "hipwizard_reverse.h"
    common.parent.mkdir(parents=True, exist_ok=True)
    common.write_text("// Generated by hipwizard from HIPIFY's tables: HIP names back to CUDA (run a port on NVIDIA)\n"
                      "#pragma once\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                      "#define __HIP_PLATFORM_NVIDIA__ 1\n#define HIP_KERNEL_NAME(...) __VA_ARGS__\n"
                      "#define hipLaunchKernelGGL(k, g, b, s, st, ...) k<<<(g), (b), (s), (st)>>>(__VA_ARGS__)\n"
                      + reverse_defines(_HIP_ONLY + list(pairs)) + "\n", encoding="utf-8")
    written.append(common)
    for hip_header, cuda_headers in _HEADER_GROUPS.items():
        path = dest / hip_header
        path.parent.mkdir(parents=True, exist_ok=True)
        includes = "".join(f"#include <{h}>\n" for h in cuda_headers)
        path.write_text(f"#pragma once\n{includes}#include \"{common.resolve()}\"\n",
                        encoding="utf-8")
        written.append(path)
    return written
