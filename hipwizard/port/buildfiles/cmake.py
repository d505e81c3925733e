"""CMake projects from the CUDA language to the HIP language (CMake >= 3.21), line for line.

``translate_cmake(text, target) -> BuildTranslation``:
- ``project(... LANGUAGES CXX CUDA)`` / ``enable_language(CUDA)`` / ``check_language(CUDA)`` -> HIP;
  ``CMAKE_CUDA_<X>`` variables and ``CUDA_<X>`` target properties -> their HIP names, the architectures set to
  ``target.arch`` (a value taken from a variable is kept and flagged); ``$<COMPILE_LANGUAGE:CUDA>`` and
  ``LANGUAGE CUDA`` -> HIP;
- ``find_package(CUDAToolkit|CUDA)`` -> ``find_package(hip)`` and one ``find_package`` a library the file links
  (the library table), ``CUDA::cublas``-style targets and FindCUDA's ``${CUDA_CUBLAS_LIBRARIES}``-style variables
  -> the counterparts' targets; a library without a drop-in is flagged;
- ``.cu`` sources named in ``add_executable``/``add_library`` (and FindCUDA's ``cuda_add_*``) get a
  ``set_source_files_properties(... PROPERTIES LANGUAGE HIP)`` line after the call, as CMake compiles only
  ``.hip`` files as HIP by default; sources given through a variable are flagged;
- nvcc flags anywhere (``nvcc.translate_command``).
Lines are added only where a call needs more than one (the find_package list, the LANGUAGE line).
"""

from __future__ import annotations

import re
from functools import partial

from hipwizard.port.buildfiles.libraries import CudaLibrary, LibraryTable, library_table
from hipwizard.port.buildfiles.model import BuildTarget, BuildTranslation, Lines, Severity
from hipwizard.port.buildfiles.nvcc import translate_command

CMAKE_DOC = "https://rocm.docs.amd.com/en/latest/conceptual/cmake-packages.html"
_CALL = re.compile(r"^\s*(?P<name>\w+)\s*\(", re.I)
_LANG_CUDA = re.compile(r"(?<![\w$])CUDA(?![\w])")
_ARCH_NAMES = re.compile(r"\b(?:CMAKE_)?CUDA_ARCHITECTURES\b")
_ARCH_SET = re.compile(r"^(?P<head>\s*set\s*\(\s*CMAKE_HIP_ARCHITECTURES\s+)(?P<value>[^)]*?)(?P<tail>\s*(?:CACHE\b[^)]*)?\)\s*)$",
                       re.I)
_ARCH_PROP = re.compile(r"(?P<head>\bHIP_ARCHITECTURES\s+)(?P<value>\"[^\"]*\"|[\w;.$\{\}-]+)")
_ARCH_ITEM = re.compile(r"^(?:\d+(?:-real|-virtual)?|native|all|all-major)$")
_RENAMES = [(re.compile(r"\bCMAKE_CUDA_(STANDARD_REQUIRED|STANDARD|EXTENSIONS|FLAGS(?:_\w+)?|COMPILER(?:_ID|_VERSION)?|"
                        r"ARCHITECTURES)\b"), r"CMAKE_HIP_\1"),
            (re.compile(r"(?<![\w$])CUDA_(STANDARD_REQUIRED|STANDARD|EXTENSIONS|ARCHITECTURES)\b"), r"HIP_\1"),
            (re.compile(r"\$<COMPILE_LANGUAGE:CUDA>"), "$<COMPILE_LANGUAGE:HIP>"),
            (re.compile(r"\$<COMPILE_LANG_AND_ID:CUDA,"), "$<COMPILE_LANG_AND_ID:HIP,"),
            (re.compile(r"\bLANGUAGE\s+CUDA\b"), "LANGUAGE HIP"),
            (re.compile(r"^(\s*)cuda_add_(executable|library)\b", re.I), r"\1add_\2"),
            (re.compile(r"^(\s*)cuda_include_directories\b", re.I), r"\1include_directories")]
_MIN_VERSION = re.compile(r"(?P<head>^\s*cmake_minimum_required\s*\(\s*VERSION\s+)(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)*",
                          re.I)
_FIND = re.compile(r"^(?P<lead>\s*)find_package\s*\(\s*(?P<pkg>CUDAToolkit|CUDA)\b(?P<args>[^)]*)\)", re.I)
_TARGET = re.compile(r"(?<![\w:])(?:CUDA|CCCL|nvidia::cutlass)::[\w:]+")
_FINDCUDA_VAR = re.compile(r"\$\{(?P<var>CUDA_\w+)\}")
_CU_SOURCE = re.compile(r"(?<![\w$/{}.-])[\w./${}-]*\.cu(?![\w.])")
_SOURCES_VAR = re.compile(r"\$\{\w+\}")
_FLAGGED_NAMES: list[tuple[re.Pattern[str], str, Severity, str, str]] = [
    (re.compile(r"\b(?:CMAKE_)?CUDA_SEPARABLE_COMPILATION\b"), "separable", "med",
     "separable compilation (device code linked across files) is not a HIP property in CMake",
     "add -fgpu-rdc to the target's compile and link options (target_compile_options / target_link_options)"),
    (re.compile(r"\bCUDA_RESOLVE_DEVICE_SYMBOLS\b"), "resolve-device-symbols", "low",
     "CUDA_RESOLVE_DEVICE_SYMBOLS has no HIP counterpart", "drop it; with -fgpu-rdc the final link resolves them"),
    (re.compile(r"\bCMAKE_CUDA_HOST_COMPILER\b"), "host-compiler", "low",
     "HIP compiles host and device code with one clang; there is no separate host compiler",
     "drop it, or set CMAKE_HIP_COMPILER"),
    (re.compile(r"\bCUDA_NVCC_FLAGS\b"), "findcuda-flags", "med",
     "FindCUDA's CUDA_NVCC_FLAGS (a list) is not read by the HIP language",
     "put these flags in CMAKE_HIP_FLAGS (a string) or target_compile_options($<COMPILE_LANGUAGE:HIP>:...)"),
    (re.compile(r"\b(?:CUDAToolkit_VERSION|CUDA_VERSION)\w*\b"), "cuda-version", "low",
     "a CUDA version check: under HIP the CUDA version is unset", "check hip_VERSION (from find_package(hip)) "
     "or drop the check"),
    (re.compile(r"\bTORCH_CUDA_ARCH_LIST\b"), "torch-arch-list", "low",
     "TORCH_CUDA_ARCH_LIST is read only by a CUDA build of torch", "a ROCm torch reads PYTORCH_ROCM_ARCH"),
]


def _statements(text_lines: list[str]) -> list[tuple[str, int, int]]:
    """(command name lower-cased, first line, last line) of each call that starts a line."""
    out, i = [], 0
    while i < len(text_lines):
        m = _CALL.match(text_lines[i])
        if not m:
            i += 1
            continue
        depth, j = 0, i
        while j < len(text_lines):
            code = text_lines[j].split("#", 1)[0] if '"' not in text_lines[j] else text_lines[j]
            depth += code.count("(") - code.count(")")
            if depth <= 0:
                break
            j += 1
        out.append((m.group("name").lower(), i, min(j, len(text_lines) - 1)))
        i = min(j, len(text_lines) - 1) + 1
    return out


def _libraries_used(text: str, table: LibraryTable) -> list[CudaLibrary]:
    used: list[CudaLibrary] = []
    for name in [*_TARGET.findall(text), *(m.group("var") for m in _FINDCUDA_VAR.finditer(text))]:
        lib = table.by_cmake_target(name) or table.by_findcuda_var(name)
        if lib is not None and lib.replaceable and lib not in used:
            used.append(lib)
    return used


def _find_packages(lead: str, args: str, used: list[CudaLibrary]) -> list[str]:
    keep = " ".join(a for a in args.split() if a.upper() in ("REQUIRED", "QUIET", "CONFIG"))
    packages = ["hip"] + [p for p in dict.fromkeys(lib.hip.cmake_package for lib in used if lib.hip is not None)
                          if p and p != "hip"]
    return [f"{lead}find_package({p}{' ' + keep if keep else ''})" for p in packages]


def _target_for(name: str, table: LibraryTable, lines: Lines, i: int) -> str:
    lib = table.by_cmake_target(name)
    if lib is None:
        if name.startswith("CUDA::"):
            lines.flag(i, "unknown-library", "med", f"{name} is not in hipwizard's library table",
                       "find its ROCm counterpart (or drop it) by hand", CMAKE_DOC)
        return name
    if lib.hip is None or not lib.replaceable or not lib.hip.cmake_targets:
        lines.flag(i, "not-drop-in" if lib.hip else "no-counterpart", "high",
                   f"{name} ({lib.name}) has no drop-in HIP counterpart", lib.advice(), lib.source)
        return name
    return lib.hip.cmake_targets[0]


def translate_cmake(text: str, target: BuildTarget = BuildTarget(), table: LibraryTable | None = None) -> BuildTranslation:
    """A ``CMakeLists.txt`` or ``*.cmake`` from CUDA to HIP; see the module docstring."""
    table = table or library_table()
    lines = Lines(text)
    used = _libraries_used(text, table)
    statements = _statements(lines.text)
    owner = {k: (name, first, last) for name, first, last in statements for k in range(first, last + 1)}
    for i, line in enumerate(lines.text):
        if line.lstrip().startswith("#"):
            continue
        name = owner.get(i, ("", i, i))[0]
        if name in ("project", "enable_language", "check_language") or (name == "if" and "CMAKE_CUDA_COMPILER" in line):
            line = _LANG_CUDA.sub("HIP", line) if name != "if" else line
        for rx, kind, severity, reason, fix in _FLAGGED_NAMES:
            if rx.search(line):
                lines.flag(i, kind, severity, reason, fix, CMAKE_DOC)
        line = _arch(line, target, lines, i)
        for rx, new in _RENAMES:
            line = rx.sub(new, line)
        found = _FIND.match(line)
        if found:
            first, *more = _find_packages(found.group("lead"), found.group("args"), used)
            line = first + line[found.end():]
            for extra in more:
                lines.insert(i, extra, after=True)
            if found.group("pkg").upper() == "CUDA":
                lines.flag(i, "findcuda", "low", "FindCUDA (find_package(CUDA)) is deprecated; its cuda_add_* "
                           "calls became plain add_* with HIP sources", "check the calls that used CUDA_* variables "
                           "and OPTIONS", CMAKE_DOC)
        line = _TARGET.sub(partial(_target_match, table=table, lines=lines, i=i), line)
        line = _FINDCUDA_VAR.sub(partial(_findcuda_var, table=table, lines=lines, i=i), line)
        line, notes = translate_command(line, target, table, root="${ROCM_PATH}", nvcc_line="CUDA" in line or
                                        "HIP" in line or "nvcc" in line.lower())
        for n in notes:
            lines.flag(i, n.kind, n.severity, n.reason, n.fix, n.source)
        lines.text[i] = line
    _mark_hip_sources(lines, statements)
    if any(re.search(r"\bHIP\b", line) for line in lines.text):
        _require_hip_language(lines)
    return lines.result("cmake")


def _require_hip_language(lines: Lines) -> None:
    """CMake knows the HIP language from 3.21 on: an older minimum is raised to it."""
    for i, line in enumerate(lines.text):
        m = _MIN_VERSION.match(line)
        if m and (int(m.group("major")), int(m.group("minor"))) < (3, 21):
            lines.text[i] = m.group("head") + "3.21" + line[m.end():]
            return


def _target_match(m: re.Match, table: LibraryTable, lines: Lines, i: int) -> str:
    return _target_for(m.group(0), table, lines, i)


def _findcuda_var(m: re.Match, table: LibraryTable, lines: Lines, i: int) -> str:
    var = m.group("var")
    lib = table.by_findcuda_var(var)
    if lib is not None and lib.hip is not None and lib.replaceable and lib.hip.cmake_targets:
        return lib.hip.cmake_targets[0]
    if var in ("CUDA_INCLUDE_DIRS", "CUDAToolkit_INCLUDE_DIRS", "CUDA_TOOLKIT_INCLUDE"):
        lines.flag(i, "cuda-include-dirs", "low", f"${{{var}}} is empty under HIP",
                   "drop it: linking hip::host (or a roc:: library) brings the HIP include folders", CMAKE_DOC)
    return m.group(0)


def _arch(line: str, target: BuildTarget, lines: Lines, i: int) -> str:
    if not _ARCH_NAMES.search(line):
        return line
    line = _ARCH_NAMES.sub(lambda m: m.group(0).replace("CUDA", "HIP"), line)

    def value(m: re.Match) -> str:
        v = m.group("value").strip()
        items = [x for x in re.split(r"[;\s]+", v.strip('"')) if x]
        if all(_ARCH_ITEM.match(x) for x in items):
            return m.group("head") + target.arch + m.group("tail") if "tail" in m.groupdict() else m.group("head") + target.arch
        lines.flag(i, "arch-var", "med", f"the architectures come from {v}, a list of CUDA compute capabilities",
                   f"set it to AMD gfx names ({target.arch} here; rocminfo lists yours)", CMAKE_DOC)
        return m.group(0)

    line = _ARCH_SET.sub(value, line)
    return _ARCH_PROP.sub(value, line)


def _mark_hip_sources(lines: Lines, statements: list[tuple[str, int, int]]) -> None:
    """After each add_executable/add_library naming ``.cu`` files, a line setting their LANGUAGE to HIP."""
    for name, first, last in statements:
        if name not in ("add_executable", "add_library", "cuda_add_executable", "cuda_add_library"):
            continue
        body = "\n".join(lines.text[first:last + 1]).split("(", 1)[1]
        sources = [s for s in _CU_SOURCE.findall(body)]
        if sources:
            lead = lines.text[first][: len(lines.text[first]) - len(lines.text[first].lstrip())]
            lines.insert(last, f"{lead}set_source_files_properties({' '.join(sources)} PROPERTIES LANGUAGE HIP)",
                         after=True)
        elif _SOURCES_VAR.search(body) and any(".cu" in line for line in lines.text):
            lines.flag(first, "hip-sources", "med", "CMake compiles only .hip files as HIP: .cu sources given "
                       "through a variable are compiled as C++ (or not at all)",
                       "mark them: set_source_files_properties(${YOUR_SOURCES} PROPERTIES LANGUAGE HIP)", CMAKE_DOC)
