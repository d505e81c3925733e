"""Makefiles (and shell build scripts) from nvcc to hipcc, line for line.

``translate_makefile(text, target) -> BuildTranslation``: the compiler (``nvcc`` -> ``hipcc``), nvcc's flags,
the GPU arch (``-arch=sm_XX`` / ``-gencode ...`` -> ``--offload-arch=<target.arch>``), CUDA paths
(``/usr/local/cuda``, ``$(CUDA_HOME)``...) -> ``$(ROCM_PATH)``, which the file defines as ``ROCM_PATH ?=
/opt/rocm`` so ``make ROCM_PATH=...`` overrides it, and libraries through the library table. What cannot be
done by rewriting (a compute capability probed with an NVIDIA tool, NVML, cuDNN) is flagged with the fix.

``translate_script(text, target)`` does the same for a shell script's nvcc lines, with ``${ROCM_PATH:-/opt/rocm}``.
Comment lines are left alone. Each input line stays one output line; at most one line is added (the
``ROCM_PATH`` default, just above its first use).

A ``.c`` rule whose recipe runs the compiler that was nvcc gets ``-x hip`` after it: nvcc compiles ``.c`` files
as C++ (with device code allowed), hipcc as C, where ``-std=c++17`` is an error and CUDA's C++ is not accepted
(the human HeCBench port of prna made this edit).
"""

from __future__ import annotations

import re

from hipwizard.port.buildfiles.libraries import LibraryTable, library_table
from hipwizard.port.buildfiles.model import BuildKind, BuildTarget, BuildTranslation, Lines
from hipwizard.port.buildfiles.nvcc import CUDA_ROOT_VARS, HIPCC_DOC, translate_command

SMI_DOC = "https://rocm.docs.amd.com/projects/amdsmi/en/latest/"
_NVCC_CONTEXT = re.compile(r"(?i)nvcc|cuda")
_ROOT_ASSIGN = re.compile(rf"^(?P<lead>\s*(?:export\s+|override\s+)?)(?:{CUDA_ROOT_VARS})\s*(?:\?|::?|!)?=(?P<value>.*)$")
_SH_ROOT_ASSIGN = re.compile(rf"^(?P<lead>\s*(?:export\s+)?)(?:{CUDA_ROOT_VARS})=(?P<value>\S*)\s*$")
_ARCH_PROBE = re.compile(r"__nvcc_device_query|deviceQuery|compute_cap|cudaGetDeviceProperties")
_NVIDIA_SMI = re.compile(r"(?<![\w-])nvidia-smi(?![\w-])")
_TORCH_ARCH = re.compile(r"\bTORCH_CUDA_ARCH_LIST\b")


def _continues(line: str) -> bool:
    return line.rstrip("\r").endswith("\\")


# ARCH ?= sm_80: a variable holding a CUDA arch; its value becomes the gfx name and -arch=$(ARCH) keeps it
_ARCH_ASSIGN = re.compile(r"^(?P<head>\s*(?:export\s+|override\s+)?(?P<var>\w+)\s*(?:\?|::?|!)?=\s*|"
                          r"\s*(?:export\s+)?(?P<svar>\w+)=)(?P<value>(?:sm|compute)_\d+\w*)(?P<tail>\s*(?:#.*)?\r?)$")


def _arch_variables(lines: Lines, target: BuildTarget) -> frozenset[str]:
    """The variables assigned a single CUDA arch (``ARCH ?= sm_80``), now assigned ``target.arch``."""
    found = set()
    for i, line in enumerate(lines.text):
        m = _ARCH_ASSIGN.match(line)
        if m:
            found.add(m.group("var") or m.group("svar"))
            lines.text[i] = m.group("head") + target.arch + m.group("tail")
    return frozenset(found)


def _translate(lines: Lines, target: BuildTarget, table: LibraryTable, *, root: str, shell: bool) -> None:
    arch_vars = _arch_variables(lines, target)
    carried = False  # the previous line ended in a backslash: this one belongs to the same command
    context = False
    for i, line in enumerate(lines.text):
        if not carried:
            context = False
        stripped = line.lstrip()
        if stripped.startswith("#") and not carried:
            carried = _continues(line)
            continue
        context = context or bool(_NVCC_CONTEXT.search(line) if not shell else re.search(r"\bnvcc\b", line))
        assign = (_SH_ROOT_ASSIGN if shell else _ROOT_ASSIGN).match(line.rstrip("\r"))
        if assign and not carried:
            cr = "\r" if line.endswith("\r") else ""
            default = f"${{{target.rocm_var}:-{target.rocm_default}}}" if shell else target.rocm_default
            lines.text[i] = f"{assign.group('lead')}{target.rocm_var}{'=' if shell else ' ?= '}{default}{cr}"
        else:
            new, notes = translate_command(line, target, table, root=root, nvcc_line=context, host_define=True,
                                           arch_vars=arch_vars)
            lines.text[i] = new
            for n in notes:
                lines.flag(i, n.kind, n.severity, n.reason, n.fix, n.source)
        _probe_flags(lines, i, line, target)
        carried = _continues(line)


def _probe_flags(lines: Lines, i: int, line: str, target: BuildTarget) -> None:
    if _ARCH_PROBE.search(line):
        lines.flag(i, "arch-detect", "high", "the GPU's compute capability is probed with an NVIDIA tool: on ROCm it "
                   "finds nothing, so the arch flag that depends on it is never added",
                   f"build for the AMD GPU's gfx arch: set it ({target.arch} here; `rocminfo | grep -o -m1 'gfx[0-9a-f]*'` "
                   "finds it) and pass --offload-arch=<gfx> unconditionally", HIPCC_DOC)
    elif _NVIDIA_SMI.search(line):
        lines.flag(i, "nvidia-smi", "med", "nvidia-smi does not exist on an AMD machine",
                   "use amd-smi (or rocm-smi); their options and output differ", SMI_DOC)
    if _TORCH_ARCH.search(line):
        lines.flag(i, "torch-arch-list", "low", "TORCH_CUDA_ARCH_LIST is read only by a CUDA build of torch",
                   f"a ROCm torch reads PYTORCH_ROCM_ARCH (e.g. PYTORCH_ROCM_ARCH={target.arch})",
                   "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/3rd-party/pytorch-install.html")


_NVCC_VAR = re.compile(r"^\s*(?:export\s+|override\s+)?(?P<var>\w+)\s*(?:\?|::?|!)?=\s*(?:\S*/)?nvcc(?:\s|#|$)")
_RULE = re.compile(r"^(?P<targets>[^\t#=:][^#=:]*?)::?(?!=)(?P<prereqs>[^=;#]*)")
_PREREQ_C = re.compile(r"(?:^|\s)\S*\.c(?=\s|$)")
_PREREQ_OBJ = re.compile(r"(?:^|\s)\S*\.(?:o|a|so)(?=\s|$)|\$[({]\w*(?:OBJ|obj)\w*[)}]")


def _c_rule(line: str) -> bool:
    """A rule (explicit, pattern, static pattern or suffix ``.c.o:``) that makes something from ``.c`` files and
    no object files (a link line keeps its inputs' types)."""
    if re.match(r"^\.c\.o\s*:", line):
        return True
    m = _RULE.match(line)
    if m is None:
        return False
    prereqs = m.group("prereqs").split(":")[-1]  # a static pattern rule: targets: target-pattern: prereq-patterns
    return bool(_PREREQ_C.search(prereqs)) and not _PREREQ_OBJ.search(prereqs)


def _c_rules_as_hip(original: list[str], lines: Lines) -> None:
    """``-x hip`` after the compiler in the recipe of each rule that builds an object from a ``.c`` file with
    the compiler that was nvcc (a variable the file assigned ``nvcc``, or ``nvcc`` itself)."""
    compilers = {m.group("var") for m in map(_NVCC_VAR.match, original) if m}
    token = "|".join([rf"\$[({{]{re.escape(v)}[)}}]" for v in sorted(compilers)] + [r"(?:\S*/)?hipcc\b"])
    call = re.compile(rf"^(?P<lead>\t[@\-+\s]*)(?P<cc>{token})(?P<rest>.*)$")
    in_c_rule = False
    for i, line in enumerate(lines.text):
        if not line.startswith("\t"):
            if line.strip() and not line.lstrip().startswith("#"):
                in_c_rule = _c_rule(line.rstrip("\r"))
            continue
        m = call.match(line) if in_c_rule else None
        if m and not re.search(r"(?:^|\s)-x\s*\w", m.group("rest")):
            lines.text[i] = f"{m.group('lead')}{m.group('cc')} -x hip{m.group('rest')}"
            lines.flag(i, "c-as-hip", "low", "nvcc compiles .c files as C++ (device code allowed); hipcc compiles "
                       "them as C, where -std=c++17 is an error and CUDA's C++ does not compile",
                       "-x hip is added before the .c file: keep it, or rename the files .cpp / .hip", HIPCC_DOC)


def _define_root(lines: Lines, target: BuildTarget) -> None:
    """``ROCM_PATH ?= /opt/rocm`` above the first line that uses ``$(ROCM_PATH)``, unless the file sets it."""
    use = f"$({target.rocm_var})"
    defines = re.compile(rf"^\s*(?:export\s+|override\s+)?{target.rocm_var}\s*(?:\?|::?|!|\+)?=")
    if any(defines.match(line) for line in lines.text):
        return
    first = next((i for i, line in enumerate(lines.text) if use in line), None)
    if first is None:
        return
    while first > 0 and _continues(lines.text[first - 1]):  # the start of its logical line
        first -= 1
    if lines.text[first].startswith("\t"):  # a recipe line: the variable goes at the top of the file
        first = 0
    lines.insert(first, f"{target.rocm_var} ?= {target.rocm_default}")


def translate_makefile(text: str, target: BuildTarget = BuildTarget(),
                       table: LibraryTable | None = None) -> BuildTranslation:
    """A Makefile (or ``*.mk``) from nvcc to hipcc; see the module docstring."""
    lines = Lines(text)
    _translate(lines, target, table or library_table(), root=f"$({target.rocm_var})", shell=False)
    _c_rules_as_hip(text.split("\n"), lines)
    _define_root(lines, target)
    return lines.result("make")


def translate_script(text: str, target: BuildTarget = BuildTarget(), table: LibraryTable | None = None,
                     kind: BuildKind = "shell") -> BuildTranslation:
    """A shell build script's nvcc lines and CUDA paths; see the module docstring."""
    lines = Lines(text)
    _translate(lines, target, table or library_table(), root=f"${{{target.rocm_var}:-{target.rocm_default}}}",
               shell=True)
    return lines.result(kind)
