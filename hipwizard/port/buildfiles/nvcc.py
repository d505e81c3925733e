"""nvcc command lines to hipcc ones, a line at a time: the flags, the GPU arch, CUDA paths and libraries.

``translate_command(line, ...) -> (line, notes)`` is shared by the Makefile, CMake and shell translators. It
changes only what it recognises and leaves the rest of the line as it was (spacing included), so a hunk shows
just the flags that changed. ``notes`` are what needs a human (``Note``: kind, severity, reason, fix, source).

Flags that only nvcc has (``--use_fast_math``, ``-Xcompiler``...) are recognised anywhere; flags whose spelling
other compilers share (``-G``, ``-t``, ``-dc``) only where the caller says the line is an nvcc one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hipwizard.port.buildfiles.libraries import LibraryTable
from hipwizard.port.buildfiles.model import BuildTarget, Severity

HIP_CLANG_DOC = "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_porting_guide.html"
HIPCC_DOC = "https://rocm.docs.amd.com/projects/HIPCC/en/latest/"


@dataclass(frozen=True)
class Note:
    kind: str
    severity: Severity
    reason: str
    fix: str
    source: str = ""


_B = r"(?<![\w-])"  # a flag starts a word
_E = r"(?![\w-])"
_VALUE = r"""(?:"[^"]*"|'[^']*'|[^\s"']+)"""
_ARCH_WORD = r"(?:sm|compute|lto)_\w+|native|all-major|all"
# -gencode/--generate-code arch=...,code=... ; -arch/--gpu-architecture (only CUDA's values: -arch x86_64 is macOS)
_GENCODE = re.compile(rf"{_B}(?:-gencode|--generate-code)(?:=|\s+){_VALUE}")
_ARCH = re.compile(rf"{_B}(?:-arch|--gpu-architecture)(?:=|\s+)(?:{_ARCH_WORD}){_E}")
_ARCH_VAR = re.compile(rf"{_B}(?:-arch|--gpu-architecture)(?:=|\s+)[\w.]*\$[({{]?\w+[)}}]?[\w.]*")
_CODE = re.compile(rf"{_B}(?:-code|--gpu-code)(?:=|\s+)(?:[\w,\[\]$(){{}}]+)")
_VAR_IN = re.compile(r"\$[({]?(\w+)")

CUDA_ROOT_VARS = r"CUDA_HOME|CUDA_PATH|CUDA_DIR|CUDA_ROOT|CUDA_INSTALL_PATH|CUDA_TOOLKIT_ROOT_DIR|CUDA_TOOLKIT_PATH|CUDATOOLKIT_HOME|CUDA_TOOLKIT_DIR|CUDA_BIN_PATH"
CUDA_ROOT = re.compile(
    rf"(?:/usr/local/cuda(?:-[\d.]+)?|/opt/cuda|/usr/lib/cuda|\$\((?:{CUDA_ROOT_VARS})\)|\$\{{(?:{CUDA_ROOT_VARS})\}}"
    rf"|\$(?:{CUDA_ROOT_VARS})(?!\w))"
    r"(?P<tail>/lib64/stubs|/lib64|/lib/x64|/targets/[\w-]+/lib|/bin/nvcc|/bin)?(?![\w.-])")
_NVCC_WORD = re.compile(r"(?<![\w$/.-])nvcc(?![\w-])")
_LIB = re.compile(r"(?<![\w-])-l(?P<name>[\w.+-]+)")
_CUDAISH_LIB = re.compile(r"^(?:cu\w+|nv\w+|nvidia-\w+|npp\w*)$")

# flag -> (replacement or "" to drop, note or None); exact spelling, no value
_PLAIN: dict[str, tuple[str, Note | None]] = {
    "--use_fast_math": ("-ffast-math", Note(
        "fast-math", "low", "nvcc's fast math (flush denormals, fast div/sqrt, fused multiply-add) is not clang's "
        "-ffast-math, which also assumes no NaN or Inf", "check isnan/isinf paths still work, or use "
        "-fno-finite-math-only beside -ffast-math", HIP_CLANG_DOC)),
    "-lineinfo": ("-gline-tables-only", None),
    "--generate-line-info": ("-gline-tables-only", None),
    "--expt-relaxed-constexpr": ("", None),  # hip-clang calls constexpr host functions from device code as is
    "--expt-extended-lambda": ("", None),  # and takes __device__ lambdas without a flag
    "--extended-lambda": ("", None),
    "-Wno-deprecated-gpu-targets": ("", None),
    "--Wno-deprecated-gpu-targets": ("", None),
    "--resource-usage": ("-Rpass-analysis=kernel-resource-usage", None),
    "--keep": ("-save-temps", None),
    "--device-debug": ("-g", None),
    "--ptx": ("", Note("ptx-output", "high", "PTX/cubin output has no AMD counterpart", "build a code object: "
                       "hipcc --genco --offload-arch=<gfx>, or -c for an object file", HIPCC_DOC)),
}
_PLAIN.update({"-use_fast_math": _PLAIN["--use_fast_math"], "-expt-relaxed-constexpr": ("", None),
               "-expt-extended-lambda": ("", None), "-ptx": _PLAIN["--ptx"], "-cubin": _PLAIN["--ptx"],
               "--cubin": _PLAIN["--ptx"], "-fatbin": _PLAIN["--ptx"], "--fatbin": _PLAIN["--ptx"]})
# only on an nvcc line: other compilers spell these the same with another meaning
_NVCC_ONLY_PLAIN: dict[str, tuple[str, Note | None]] = {
    "-G": ("-g", Note("device-debug", "low", "nvcc's -G turns off device optimisation for debugging",
                      "hipcc: -g -O0 for a debug build of device code", HIPCC_DOC)),
    "-dc": ("-fgpu-rdc -c", None),
    "-keep": ("-save-temps", None),
}
_PLAIN_RX = re.compile(rf"{_B}(?:{'|'.join(re.escape(k) for k in sorted(_PLAIN, key=len, reverse=True))}){_E}")
_NVCC_PLAIN_RX = re.compile(rf"{_B}(?:{'|'.join(re.escape(k) for k in _NVCC_ONLY_PLAIN)}){_E}")

_XCOMPILER = re.compile(rf"{_B}(?:-Xcompiler|--compiler-options)(?:=|\s+)(?P<v>{_VALUE})")
_XLINKER = re.compile(rf"{_B}(?:-Xlinker|--linker-options)(?:=|\s+)(?P<v>{_VALUE})")
_XPTXAS = re.compile(rf"{_B}(?:-Xptxas|--ptxas-options)(?:=|\s+)(?P<v>{_VALUE})")
_MAXRREG = re.compile(rf"{_B}(?:-maxrregcount|--maxrregcount)(?:=|\s+)\S+")
_RDC = re.compile(rf"{_B}(?:-rdc|--relocatable-device-code)(?:=|\s+)(?P<v>true|false){_E}")
_DEFAULT_STREAM = re.compile(rf"{_B}(?:--default-stream|-default-stream)(?:=|\s+)(?P<v>per-thread|legacy|null){_E}")
_CCBIN = re.compile(rf"{_B}(?:-ccbin|--compiler-bindir)(?:=|\s+){_VALUE}")
_STD = re.compile(rf"{_B}(?:--std|-std)\s+(?P<v>c\+\+\w+)")
_STD_EQ = re.compile(rf"{_B}--std=(?P<v>c\+\+\w+)")
_X_CU = re.compile(rf"{_B}-x\s+cu{_E}")
# nvcc-only spellings with a value that mean nothing to hipcc: dropped (the line says what was there)
_DROP_VALUED = re.compile(rf"{_B}(?:-t|--threads|--machine|-cudart|--cudart)(?:=|\s+)(?:\d+|none|shared|static){_E}")


def _unquote(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'" else v


def _sub(rx: re.Pattern, line: str, fn: Callable[[re.Match], str]) -> str:
    """``rx.sub`` that also removes the blank before a match replaced by nothing."""
    out, last = [], 0
    for m in rx.finditer(line):
        new = fn(m)
        start = m.start()
        if new == "" and start > last and line[start - 1] in " \t":
            start -= 1
        out.append(line[last:start])
        out.append(new)
        last = m.end()
    out.append(line[last:])
    return "".join(out)


def translate_arch(line: str, target: BuildTarget, notes: list[Note], *, nvcc_line: bool,
                   arch_vars: frozenset[str] = frozenset()) -> str:
    """Every -gencode / -arch / --generate-code on the line becomes one ``--offload-arch=<gfx>``; an arch
    given through a variable of ``arch_vars`` (which the caller rewrites to a gfx name) stays that variable."""
    arch = f"--offload-arch={target.arch}"
    state = {"done": False}

    def first(m: re.Match) -> str:
        vars_ = [v for v in _VAR_IN.findall(m.group(0)) if not v.startswith("shell")]
        if vars_ and vars_[0] in arch_vars and not state["done"]:
            state["done"] = True
            return "--offload-arch=" + m.group(0)[m.group(0).index("$"):]
        if vars_:
            notes.append(Note("arch-var", "med", f"the CUDA arch came from ${vars_[0]} (a compute capability); "
                              f"the translated line builds for {target.arch}",
                              f"build for your GPU's gfx arch (rocminfo | grep gfx); {vars_[0]} means nothing on ROCm",
                              HIPCC_DOC))
        if state["done"]:
            return ""
        state["done"] = True
        return arch

    line = _sub(_GENCODE, line, first)
    line = _sub(_ARCH, line, first)
    if nvcc_line:
        line = _sub(_ARCH_VAR, line, first)
    return _sub(_CODE, line, lambda m: "" if state["done"] or nvcc_line else m.group(0))


def translate_flags(line: str, notes: list[Note], *, nvcc_line: bool) -> str:
    """nvcc-only flags mapped to hipcc's, or dropped with a note where hipcc has none."""

    def plain(table: dict[str, tuple[str, Note | None]]) -> Callable[[re.Match], str]:
        def fn(m: re.Match) -> str:
            new, note = table[m.group(0)]
            if note is not None:
                notes.append(note)
            return new
        return fn

    line = _sub(_PLAIN_RX, line, plain(_PLAIN))
    line = _sub(_XCOMPILER, line, lambda m: " ".join(p for p in re.split(r"[,\s]+", _unquote(m.group("v"))) if p))
    line = _sub(_XLINKER, line, lambda m: "-Wl," + _unquote(m.group("v")))

    def ptxas(m: re.Match) -> str:
        value = _unquote(m.group("v"))
        if value.strip() in ("-v", "--verbose"):
            return "-Rpass-analysis=kernel-resource-usage"
        notes.append(Note("ptxas-option", "med", f"PTX assembler option {value} has no AMDGPU counterpart",
                          "drop it; for register limits use __launch_bounds__ (HIP reads it per kernel)", HIPCC_DOC))
        return ""

    line = _sub(_XPTXAS, line, ptxas)

    def maxrreg(m: re.Match) -> str:
        notes.append(Note("maxrregcount", "med", f"{m.group(0).strip()}: hipcc has no flag capping registers per "
                          "thread", "cap registers per kernel with __launch_bounds__(threads) or "
                          "__attribute__((amdgpu_waves_per_eu(n)))", HIP_CLANG_DOC))
        return ""

    line = _sub(_MAXRREG, line, maxrreg)
    line = _sub(_RDC, line, lambda m: "-fgpu-rdc" if m.group("v") == "true" else "")
    line = _sub(_DEFAULT_STREAM, line, lambda m: "-fgpu-default-stream=per-thread"
                if m.group("v") == "per-thread" else "")

    def ccbin(m: re.Match) -> str:
        notes.append(Note("ccbin", "low", f"{m.group(0).strip()}: hipcc compiles host code with its own clang",
                          "drop it; set HIP_CLANG_PATH to choose another clang", HIPCC_DOC))
        return ""

    line = _sub(_CCBIN, line, ccbin)
    line = _sub(_STD_EQ, line, lambda m: "-std=" + m.group("v"))
    line = _sub(_X_CU, line, lambda m: "-x hip")
    if nvcc_line:
        line = _sub(_STD, line, lambda m: "-std=" + m.group("v"))
        line = _sub(_NVCC_PLAIN_RX, line, plain(_NVCC_ONLY_PLAIN))
        line = _sub(_DROP_VALUED, line, lambda m: "")
    return line


def translate_paths(line: str, root: str) -> str:
    """CUDA install paths (literal or through $(CUDA_HOME)-like variables) to ``root``: lib64 -> lib,
    bin/nvcc -> bin/hipcc."""
    tails = {"/lib64": "/lib", "/lib64/stubs": "/lib", "/lib/x64": "/lib", "/bin/nvcc": "/bin/hipcc", "/bin": "/bin"}

    def fn(m: re.Match) -> str:
        tail = m.group("tail") or ""
        return root + (tails.get(tail, "/lib" if tail.startswith("/targets/") else tail))

    return CUDA_ROOT.sub(fn, line)


def translate_libraries(line: str, table: LibraryTable, notes: list[Note]) -> str:
    """``-l<cuda library>`` to its counterpart's link names; a library without a drop-in is left and noted."""

    def fn(m: re.Match) -> str:
        name = m.group("name")
        lib = table.by_link(name)
        if lib is None:
            if _CUDAISH_LIB.match(name) and name not in ("numa",):
                notes.append(Note("unknown-library", "med", f"-l{name} looks like a CUDA library hipwizard's "
                                  "table does not know", "find its ROCm counterpart (or drop it) by hand"))
            return m.group(0)
        if lib.hip is None or not lib.replaceable:
            notes.append(Note("not-drop-in" if lib.hip else "no-counterpart", "high",
                              f"-l{name} ({lib.name}) has no drop-in HIP counterpart", lib.advice(), lib.source))
            return m.group(0)
        return " ".join(f"-l{n}" for n in lib.hip.links) if lib.hip.links else ""

    return _sub(_LIB, line, fn)


def translate_command(line: str, target: BuildTarget, table: LibraryTable, *, root: str,
                      nvcc_line: bool, host_define: bool = False,
                      arch_vars: frozenset[str] = frozenset()) -> tuple[str, list[Note]]:
    """One line of a build file with every nvcc-ism translated (see the module docstring). ``host_define``: a
    CUDA include folder that becomes ROCm's also gets ``-D__HIP_PLATFORM_AMD__``, which a host compiler needs
    to read the HIP headers."""
    notes: list[Note] = []
    translated = translate_paths(line, root)
    if translated != line and host_define and "__HIP_PLATFORM_AMD__" not in translated:
        # a host compiler (g++) reading hip_runtime.h must be told the platform; hipcc defines it itself
        translated = re.sub(rf"(-I\s*{re.escape(root)}/include)(?![\w/.-])", r"\1 -D__HIP_PLATFORM_AMD__",
                            translated, count=1)
    line = translated
    line = translate_arch(line, target, notes, nvcc_line=nvcc_line, arch_vars=arch_vars)
    line = translate_flags(line, notes, nvcc_line=nvcc_line)
    line = translate_libraries(line, table, notes)
    line = _NVCC_WORD.sub("hipcc", line)
    return line, notes
