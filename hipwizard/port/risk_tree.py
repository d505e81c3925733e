"""Risks that cross files: warp-size facts of one file flagged where another file of the project uses them.

A project defines ``#define WARP_SIZE 32`` in a header and sizes launches with it in a ``.cu``; a kernel that
reduces over 32 lanes lives in ``kernels.h`` and is launched from ``main.cu`` (HeCBench f27000a5 src/*-cuda vs
src/*-hip: gemv, softmax-online, addBiasResidualLayerNorm). Per file, the rules see only half of each. Here each
file learns the facts of the files it can see — the other files of its folder, and the files it includes by a
relative path — and the launches and calls of the warp-sized kernels and helpers are flagged (``WARP_KERNEL_USE``),
as are the heads of functions a foreign constant makes warp-sized.
"""

from __future__ import annotations

import posixpath
import re

from hipwizard.port.model import FileTranslation
from hipwizard.port.risk_flow import reducers, warp_function_uses, warp_functions
from hipwizard.port.risk_rules import RULES_BY_ID
from hipwizard.port.risk_rules_host import warp32_consts
from hipwizard.port.risks import Finding, attach_findings, code_lines

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
_MARKERS = ("32", "31", "0x1f", "0x1F", ">> 5", ">>5")  # a file without any of these exports no warp fact


def flag_tree(files: list[FileTranslation]) -> int:
    """Add the cross-file flags to ``files`` (already flagged one by one); returns how many were added."""
    by_path = {ft.path: ft for ft in files}
    lines = {}
    consts: dict[str, set[str]] = {}
    for ft in files:
        if any(m in ft.translated for m in _MARKERS):
            lines[ft.path] = code_lines(ft.translated)
            consts[ft.path] = set(warp32_consts(lines[ft.path]).values())
    if not lines:
        return 0
    folders: dict[str, list[str]] = {}
    for path in by_path:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    seen = {path: _visible(path, by_path, folders) for path in by_path}
    # a function is warp-sized by its own file's facts or by a constant it sees in another file
    funcs: dict[str, dict[str, int]] = {}
    own: dict[str, dict[str, int]] = {}
    foreigns = {path: set().union(*(consts.get(p, set()) for p in seen[path])) - consts.get(path, set())
                for path in by_path}
    for ft in files:
        foreign = foreigns[ft.path]
        if ft.path in lines:
            own[ft.path] = warp_functions(lines[ft.path])
        if foreign:
            if ft.path not in lines:
                lines[ft.path] = code_lines(ft.translated)
            funcs[ft.path] = warp_functions(lines[ft.path], foreign)
        elif ft.path in own:
            funcs[ft.path] = own[ft.path]
    # callers of another file's warp-sized helpers are warp-sized too (a kernel in main.cu calling kernels.h's
    # block reduction)
    shuffling = {p: reducers(lines[p], funcs.get(p, {})) for p in list(lines)}  # once per file, not per viewer
    for ft in files:
        callees = {n for p in seen[ft.path] for n in shuffling.get(p, ())} - set(funcs.get(ft.path, {}))
        callees = {n for n in callees if n in ft.translated}
        if callees:
            if ft.path not in lines:
                lines[ft.path] = code_lines(ft.translated)
            funcs[ft.path] = warp_functions(lines[ft.path], foreigns[ft.path], callees)
    added = 0
    for ft in files:
        path = ft.path
        own_funcs = own.get(path, {})
        new_funcs = {n: i for n, i in funcs.get(path, {}).items() if n not in own_funcs}
        other_funcs = {n for p in seen[path] for n in funcs.get(p, {})} - set(funcs.get(path, {}))
        if not (new_funcs or other_funcs):
            continue
        ls = lines.get(path) or code_lines(ft.translated)
        # (a foreign constant's own uses are not flagged: ports fix such a constant where it is defined —
        # in-sample, 7 of 42 such places were near an edit — but the kernels it sizes need the warp size)
        found = []
        kernel_lines = set(new_funcs.values()) | set(warp_function_uses(ls, set(new_funcs) | other_funcs))
        found += [Finding(RULES_BY_ID["WARP_KERNEL_USE"], i + 1) for i in sorted(kernel_lines)]
        added += attach_findings(ft, found)
    return added


def _visible(path: str, by_path: dict[str, FileTranslation], folders: dict[str, list[str]]) -> set[str]:
    """The other files of ``path``'s folder, and the files it includes by a relative path."""
    folder = posixpath.dirname(path)
    out = {p for p in folders[folder] if p != path}
    for inc in _INCLUDE.findall(by_path[path].translated):
        target = posixpath.normpath(posixpath.join(folder, inc))
        if target in by_path and target != path:
            out.add(target)
    return out
