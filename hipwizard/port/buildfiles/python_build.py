"""``setup.py`` and ``pyproject.toml`` of torch extensions (``CUDAExtension``), line for line.

``translate_setup(text, target)``: the CUDA-only gates are widened so a ROCm torch builds the extension too
(``CUDA_HOME is not None`` -> ``(CUDA_HOME is not None or ROCM_HOME is not None)``, with ``ROCM_HOME`` imported
from ``torch.utils.cpp_extension`` beside ``CUDA_HOME``; ``torch.version.cuda is not None`` -> also
``torch.version.hip``). On a ROCm torch ``CUDA_HOME`` is None, so such a gate silently builds CPU-only. Flagged:
``CUDAExtension`` (a ROCm torch hipifies the ``.cu`` sources at build time and compiles them with hipcc), nvcc
flags (on a ROCm torch ``extra_compile_args['nvcc']`` goes to hipcc: the fix names the hipcc spelling), CUDA
libraries named for linking, ``CUDA_HOME`` used as a path, ``TORCH_CUDA_ARCH_LIST``.

``translate_pyproject(text, target)``: flags only (CUDA wheels in dependencies, CUDA torch indexes, CUDA arch
settings); nothing there can be rewritten without breaking the CUDA build.
"""

from __future__ import annotations

import re

from hipwizard.port.buildfiles.libraries import LibraryTable, library_table
from hipwizard.port.buildfiles.model import BuildTarget, BuildTranslation, Lines
from hipwizard.port.buildfiles.nvcc import translate_command

TORCH_EXT_DOC = "https://pytorch.org/docs/stable/cpp_extension.html"
TORCH_ROCM_DOC = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/3rd-party/pytorch-install.html"
_P = r"(?P<p>(?:[A-Za-z_][\w]*\.)*)"  # an optional module prefix: cpp_extension.CUDA_HOME
_HOME_IS_NOT = re.compile(rf"(?<![\w.]){_P}CUDA_HOME\s+is\s+not\s+None")
_HOME_IS = re.compile(rf"(?<![\w.]){_P}CUDA_HOME\s+is\s+None")
_VERSION_IS_NOT = re.compile(r"(?<![\w.])torch\.version\.cuda\s+is\s+not\s+None")
_VERSION_IS = re.compile(r"(?<![\w.])torch\.version\.cuda\s+is\s+None")
_VERSION_TRUTHY = re.compile(r"(?P<kw>\b(?:if|and|or|not)\s+)torch\.version\.cuda\b(?!\s*(?:is\b|[=!<>]=|[.\[(]))")
_IMPORT_HOME = re.compile(r"\bfrom\s+torch\.utils\.cpp_extension\s+import\b")
_HOME_NAME = re.compile(r"(?<![\w.])CUDA_HOME(?![\w])")
_HOME_AS_PATH = re.compile(r"os\.path\.join\(\s*(?:[\w.]*\.)?CUDA_HOME|f[\"'][^\"']*\{(?:[\w.]*\.)?CUDA_HOME\}|"
                           r"(?:environ(?:\.get)?|getenv)\s*[\[(]\s*[\"']CUDA_HOME[\"']|CUDA_HOME\s*\+|CUDA_HOME\s*/")
_NVCC_FLAG = re.compile(r"-gencode|--generate-code|--use_fast_math|-use_fast_math|-lineinfo|--expt-|-Xcompiler|"
                        r"-Xptxas|--ptxas-options|-arch=sm_|-arch=compute_|-maxrregcount|--default-stream|-rdc=")
_LIBRARIES = re.compile(r"""(?:libraries\s*=|["']-l)""")
_STRING = re.compile(r"""["'](?P<s>[^"']*)["']""")
_QUOTED = re.compile(r"""["'](?:-l)?(?P<name>[\w.+-]+)["']""")
_EXTENSION = re.compile(r"(?<![\w.])CUDAExtension\b")
_TORCH_ARCH = re.compile(r"\bTORCH_CUDA_ARCH_LIST\b")


def translate_setup(text: str, target: BuildTarget = BuildTarget(), table: LibraryTable | None = None, *,
                    fix_gates: bool = True) -> BuildTranslation:
    """A ``setup.py`` building torch CUDA extensions; see the module docstring. ``fix_gates`` False: the
    text is kept and only the build's flags are given (for a pipeline whose Python scan fixes the gates)."""
    table = table or library_table()
    lines = Lines(text)
    widened = False
    for i, line in enumerate(lines.text):
        if line.lstrip().startswith("#"):
            continue
        if not fix_gates:
            _flag_setup_line(lines, i, line, target, table, cuda_home=False)
            continue
        new = _HOME_IS_NOT.sub(lambda m: f"({m.group(0)} or {m.group('p')}ROCM_HOME is not None)", line)
        new = _HOME_IS.sub(lambda m: f"({m.group(0)} and {m.group('p')}ROCM_HOME is None)", new)
        widened = widened or (new != line and bool(re.search(r"(?<![\w.])ROCM_HOME", new)))
        new = _VERSION_IS_NOT.sub(lambda m: f"({m.group(0)} or torch.version.hip is not None)", new)
        new = _VERSION_IS.sub(lambda m: f"({m.group(0)} and torch.version.hip is None)", new)
        new = _VERSION_TRUTHY.sub(r"\g<kw>(torch.version.cuda or torch.version.hip)", new)
        lines.text[i] = new
        _flag_setup_line(lines, i, line, target, table)
    if widened:
        _import_rocm_home(lines)
    return lines.result("setup")


def _import_rocm_home(lines: Lines) -> None:
    """``ROCM_HOME`` beside ``CUDA_HOME`` in the ``from torch.utils.cpp_extension import`` that names it."""
    if any(re.search(r"import\b.*\bROCM_HOME\b", line) for line in lines.text):
        return
    in_import = False
    for i, line in enumerate(lines.text):
        in_import = in_import or bool(_IMPORT_HOME.search(line))
        if in_import and _HOME_NAME.search(line):
            lines.text[i] = _HOME_NAME.sub("CUDA_HOME, ROCM_HOME", line, count=1)
            return
        if in_import and ")" in line or (in_import and "(" not in line and not line.rstrip().endswith("\\")):
            in_import = False


def _flag_setup_line(lines: Lines, i: int, line: str, target: BuildTarget, table: LibraryTable, *,
                     cuda_home: bool = True) -> None:
    if _EXTENSION.search(line) and not re.match(r"\s*(?:from|import)\b", line) and not lines.has_flag("build-hipify"):
        lines.flag(i, "build-hipify", "low", "on a ROCm torch, CUDAExtension runs torch.utils.hipify over the "
                   "sources at build time (hipified copies beside them) and compiles them with hipcc",
                   "keep CUDAExtension; build with the ROCm torch installed and check the hipified copies "
                   "(or give it the already translated sources)", TORCH_EXT_DOC)
    if cuda_home and _HOME_AS_PATH.search(line):
        lines.flag(i, "cuda-home-path", "high", "CUDA_HOME is used as a path: it is None (or unset) under a ROCm "
                   "torch", "use ROCM_HOME from torch.utils.cpp_extension when torch.version.hip is set",
                   TORCH_EXT_DOC)
    if _NVCC_FLAG.search(line):
        part = re.split(r"""["']nvcc["']""", line, maxsplit=1)[-1]  # the nvcc list, not the cxx one before it
        flags = " ".join(m.group("s") for m in _STRING.finditer(part) if m.group("s").startswith("-") or "=" in m.group("s"))
        hip, _ = translate_command(flags, target, table, root="ROCM_HOME", nvcc_line=True)
        lines.flag(i, "nvcc-args", "med", "nvcc flags: on a ROCm torch, extra_compile_args['nvcc'] is passed to "
                   "hipcc, which rejects nvcc-only flags", "choose them by platform (torch.version.hip); for hipcc: "
                   f"{hip.strip() or '(none)'}", TORCH_EXT_DOC)
    for m in _QUOTED.finditer(line):
        lib = table.by_link(m.group("name"))
        if lib is not None and (m.group("name") != "cuda" or _LIBRARIES.search(line)):
            if lib.replaceable:
                lines.flag(i, "link-library", "med", f"{m.group('name')} ({lib.name}) is linked by name: the ROCm "
                           "build needs the counterpart", "choose by platform (torch.version.hip): " + lib.advice(),
                           lib.source)
            else:
                lines.flag(i, "not-drop-in", "high", f"{m.group('name')} ({lib.name}) has no drop-in HIP "
                           "counterpart", lib.advice(), lib.source)
    if _TORCH_ARCH.search(line):
        lines.flag(i, "torch-arch-list", "low", "TORCH_CUDA_ARCH_LIST is read only by a CUDA build of torch",
                   f"a ROCm torch reads PYTORCH_ROCM_ARCH (e.g. PYTORCH_ROCM_ARCH={target.arch})", TORCH_ROCM_DOC)


_CUDA_WHEEL = re.compile(r"""["'](?P<dep>(?:nvidia-[\w-]+-cu\d+|cupy-cuda\w+|[\w-]+-cu1\d\w*|torch[^"']*\+cu\d+)[^"']*)["']""")
_CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/cu\d+")


def translate_pyproject(text: str, target: BuildTarget = BuildTarget(),
                        table: LibraryTable | None = None) -> BuildTranslation:
    """A ``pyproject.toml``: flags on CUDA-only dependencies, indexes and arch settings (the text is kept)."""
    lines = Lines(text)
    for i, line in enumerate(lines.text):
        if line.lstrip().startswith("#"):
            continue
        wheels = [m.group("dep") for m in _CUDA_WHEEL.finditer(line)]
        if wheels:
            lines.flag(i, "cuda-wheel", "med", f"{', '.join(wheels)}: CUDA builds of packages",
                       "use its ROCm build where one exists (torch from a rocm index; cupy-rocm-*), or make it "
                       "optional", TORCH_ROCM_DOC)
        if _CUDA_INDEX.search(line):
            lines.flag(i, "cuda-index", "med", "a CUDA wheel index of torch", "use the ROCm index "
                       "(download.pytorch.org/whl/rocmX.Y for your ROCm)", TORCH_ROCM_DOC)
        if re.search(r"\bCMAKE_CUDA_ARCHITECTURES\b|\bTORCH_CUDA_ARCH_LIST\b", line):
            lines.flag(i, "arch-var", "med", "a CUDA architecture setting", f"set the HIP one "
                       f"(CMAKE_HIP_ARCHITECTURES / PYTORCH_ROCM_ARCH) to {target.arch}", TORCH_ROCM_DOC)
    return lines.result("pyproject")
