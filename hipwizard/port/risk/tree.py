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
from hipwizard.port.risk.flow import reducers, warp_function_uses, warp_functions
from hipwizard.port.risk.rules import RULES_BY_ID
from hipwizard.port.risk.rules_host import warp32_consts
from hipwizard.port.risk.flags import Finding, attach_findings, code_lines

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
    # What a file sees is its folder (the file itself aside) and the files it includes. Each fact below is
    # "the union over what it sees, minus its own": the union over its whole folder, its own included, minus
    # its own is the same set, so each folder's union is made once (a flat folder of F files: F, not F^2).
    includes = {path: _included(path, by_path) for path in by_path}

    def seen_union(facts: dict[str, set[str]], path: str, by_folder: dict[str, set[str]]) -> set[str]:
        out = set(by_folder[posixpath.dirname(path)])
        for p in includes[path]:
            out |= facts.get(p, set())
        return out

    # a function is warp-sized by its own file's facts or by a constant it sees in another file
    funcs: dict[str, dict[str, int]] = {}
    own: dict[str, dict[str, int]] = {}
    folder_consts = _folder_unions(folders, consts)
    foreigns = {path: seen_union(consts, path, folder_consts) - consts.get(path, set()) for path in by_path}
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
    # block reduction); a file's own shuffling helpers are among its functions, so "minus its own functions"
    # also takes them out of its folder's union
    shuffling = {p: reducers(lines[p], funcs.get(p, {})) for p in list(lines)}  # once per file, not per viewer
    folder_shuffling = _folder_unions(folders, shuffling)
    for ft in files:
        callees = seen_union(shuffling, ft.path, folder_shuffling) - set(funcs.get(ft.path, {}))
        callees = {n for n in callees if n in ft.translated}
        if callees:
            if ft.path not in lines:
                lines[ft.path] = code_lines(ft.translated)
            funcs[ft.path] = warp_functions(lines[ft.path], foreigns[ft.path], callees)
    func_names = {p: set(f) for p, f in funcs.items()}
    folder_funcs = _folder_unions(folders, func_names)
    added = 0
    for ft in files:
        path = ft.path
        own_funcs = own.get(path, {})
        new_funcs = {n: i for n, i in funcs.get(path, {}).items() if n not in own_funcs}
        other_funcs = seen_union(func_names, path, folder_funcs) - func_names.get(path, set())
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


def _folder_unions(folders: dict[str, list[str]], facts: dict[str, set[str]]) -> dict[str, set[str]]:
    """{folder: the union of its files' ``facts``}."""
    return {folder: set().union(*(facts.get(p, set()) for p in paths)) for folder, paths in folders.items()}


def _included(path: str, by_path: dict[str, FileTranslation]) -> set[str]:
    """The other files of the tree that ``path`` includes by a relative path."""
    folder = posixpath.dirname(path)
    out = set()
    for inc in _INCLUDE.findall(by_path[path].translated):
        target = posixpath.normpath(posixpath.join(folder, inc))
        if target in by_path and target != path:
            out.add(target)
    return out
