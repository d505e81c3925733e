"""Which of the translator's changes are renames (the compat header maps them) and which must differ.

A line pair (CUDA line, translated line) is ``same``, a ``rename`` (the same tokens but for identifiers swapped
one for one: ``cudaMalloc`` -> ``hipMalloc``), an ``include`` (a header swapped or added), or ``code`` (anything
else: arguments added, a cast, a call restructured). A rename of a compiler-defined macro (``__CUDACC__``,
``__CUDA_ARCH__``) is code: defining it on AMD would make headers believe nvcc compiles them.
"""

from __future__ import annotations

import re
from typing import Literal

LineKind = Literal["same", "rename", "include", "code"]
_TOKEN = re.compile(r"[A-Za-z_]\w*|\.?\d(?:[\w.']|[eEpP][+-])*|\S")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_INCLUDE = re.compile(r"^\s*#\s*include\b")
_PREDEFINED = re.compile(r"^__[A-Z0-9_]+__$")  # __CUDACC__, __CUDA_ARCH__, __NVCC__


def is_include(line: str) -> bool:
    return bool(_INCLUDE.match(line))


def renames(old: str, new: str) -> list[tuple[str, str]] | None:
    """The identifier swaps that turn ``old`` into ``new`` (in order, repeats kept), or None when the two
    differ by more than identifier swaps."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if not (_IDENT.fullmatch(x) and _IDENT.fullmatch(y)) or _PREDEFINED.match(x):
            return None
        out.append((x, y))
    return out


def classify(old: str, new: str, known: dict[str, str]) -> tuple[LineKind, list[tuple[str, str]]]:
    """The kind of the pair and its renames. ``known`` holds the renames taken so far (CUDA -> HIP): a name
    the translator mapped to another HIP name before makes this pair ``code`` (one macro per name)."""
    if old == new:
        return "same", []
    if is_include(old) or is_include(new):
        return "include", []
    pairs = renames(old, new)
    if pairs is None or any(known.get(x, y) != y for x, y in pairs):
        return "code", []
    if len({x for x, _ in pairs}) != len(dict(pairs)) or any(dict(pairs)[x] != y for x, y in pairs):
        return "code", []  # one name mapped two ways on one line
    return "rename", pairs
