"""Which build files a CUDA tree has, and the translator for each.

``build_kind(path, text)``: ``"make"`` (Makefile, GNUmakefile, ``*.mk``, ``*.mak``), ``"cmake"`` (CMakeLists.txt,
``*.cmake``), ``"setup"`` (setup.py), ``"pyproject"`` (pyproject.toml), ``"shell"`` (``*.sh``/``*.bash`` that
call nvcc), or None; a file whose text says nothing of CUDA is None too (nothing to port).
``translate_build_file(path, text, target)`` runs the matching translator (pure: text in, text and flags out).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from hipwizard.port.buildfiles.cmake import translate_cmake
from hipwizard.port.buildfiles.libraries import LibraryTable
from hipwizard.port.buildfiles.makefile import translate_makefile, translate_script
from hipwizard.port.buildfiles.model import BuildKind, BuildTarget, BuildTranslation
from hipwizard.port.buildfiles.python_build import translate_pyproject, translate_setup

BUILD_NAMES = {"makefile": "make", "gnumakefile": "make", "cmakelists.txt": "cmake", "setup.py": "setup",
               "pyproject.toml": "pyproject"}
BUILD_SUFFIXES = {".mk": "make", ".mak": "make", ".cmake": "cmake", ".sh": "shell", ".bash": "shell"}
_CUDA_TEXT = re.compile(r"(?i)nvcc|cuda|cublas|cudnn|nccl|nvidia|\bsm_\d|compute_\d")
_NVCC_CALL = re.compile(r"(?<![\w-])nvcc(?![\w-])")


def build_kind(path: str, text: str | None = None) -> BuildKind | None:
    """The kind of build file ``path`` is (see the module docstring); with ``text``, None unless it mentions CUDA."""
    name = PurePosixPath(path).name
    kind = BUILD_NAMES.get(name.lower()) or BUILD_SUFFIXES.get(PurePosixPath(name).suffix.lower())
    if kind is None and name.lower().startswith("makefile."):
        kind = "make"
    if kind is None or text is None:
        return kind  # type: ignore[return-value]
    if kind == "shell":
        return "shell" if _NVCC_CALL.search(text) else None
    return kind if _CUDA_TEXT.search(text) else None  # type: ignore[return-value]


def translate_build_file(path: str, text: str, target: BuildTarget = BuildTarget(),
                         table: LibraryTable | None = None) -> BuildTranslation | None:
    """``text`` (the file at ``path``) translated for ``target``, or None when it is no CUDA build file."""
    kind = build_kind(path, text)
    if kind is None:
        return None
    translate = {"make": translate_makefile, "cmake": translate_cmake, "setup": translate_setup,
                 "pyproject": translate_pyproject, "shell": translate_script}[kind]
    return translate(text, target, table)
