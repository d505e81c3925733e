"""Risks that cross files: warp-size facts of one file flagged where another file of the project uses them.

A project defines ``#define WARP_SIZE 32`` in a header and sizes launches with it in a ``.cu``; a kernel that
reduces over 32 lanes lives in ``kernels.h`` and is launched from ``main.cu`` (HeCBench f27000a5 src/*-cuda vs
src/*-hip: gemv, softmax-online, addBiasResidualLayerNorm). Per file, the rules see only half of each. Here each
file learns the facts of the files it can see — the other files of its folder, and the files it includes,
directly or through other project headers (a quoted include resolved beside the including file, else from the
tree's root or a folder above it, as ``-I.`` builds do) — and the launches and calls of the warp-sized kernels
and helpers are flagged (``WARP_KERNEL_USE``), as are the heads of functions a foreign constant makes warp-sized
and the lines that size something by a foreign warp constant (``WARP32_CONST_USE``: llm.c's ``#define WARP_SIZE
32U`` in llmc/cuda_common.h sizes lines in every .cuh and .cu that includes it; its AMD port changed
llmc/matmul.cuh's ``dim3 block_dim = {4, 8, (unsigned)block_size/WARP_SIZE}``).

A project's alias of a CUDA name HIP lacks (jaxlib's vendor.h ``#define gpudnnRNNForward cudnnRNNForward``) is
flagged where the other files of the tree use it (``VENDOR_ALIAS``; the alias's own file: the rule itself).
"""

from __future__ import annotations

import posixpath
import re

from hipwizard.port.model import FileTranslation
from hipwizard.port.risk.divergence import alias_uses, lacking_aliases
from hipwizard.port.risk.flags import Finding, attach_findings, code_lines
from hipwizard.port.risk.flow import reducers, warp_function_uses, warp_functions
from hipwizard.port.risk.rules import RULES_BY_ID
from hipwizard.port.risk.rules_host import warp32_const_uses, warp32_consts

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
_MARKERS = ("32", "31", "0x1f", "0x1F", ">> 5", ">>5")  # a file without any of these exports no warp fact


def flag_tree(files: list[FileTranslation]) -> int:
    """Add the cross-file flags to ``files`` (already flagged one by one); returns how many were added."""
    by_path = {ft.path: ft for ft in files}
    alias_added = _flag_alias_uses(files)
    lines = {}
    consts: dict[str, set[str]] = {}
    for ft in files:
        if any(m in ft.translated for m in _MARKERS):
            lines[ft.path] = code_lines(ft.translated)
            consts[ft.path] = set(warp32_consts(lines[ft.path]).values())
    if not lines:
        return alias_added
    folders: dict[str, list[str]] = {}
    for path in by_path:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    # What a file sees is its folder (the file itself aside) and the files it includes. Each fact below is
    # "the union over what it sees, minus its own": the union over its whole folder, its own included, minus
    # its own is the same set, so each folder's union is made once (a flat folder of F files: F, not F^2).
    includes = _closure({path: _included(path, by_path) for path in by_path})

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
    for ft in files:  # the lines a foreign warp constant sizes (a file's own ones are flagged by the rule itself)
        if foreigns[ft.path] and ft.path in lines:
            uses = warp32_const_uses(lines[ft.path], foreigns[ft.path])
            added += attach_findings(ft, [Finding(RULES_BY_ID["WARP32_CONST_USE"], i + 1) for i in uses])
    for ft in files:
        path = ft.path
        own_funcs = own.get(path, {})
        new_funcs = {n: i for n, i in funcs.get(path, {}).items() if n not in own_funcs}
        other_funcs = seen_union(func_names, path, folder_funcs) - func_names.get(path, set())
        if not (new_funcs or other_funcs):
            continue
        ls = lines.get(path) or code_lines(ft.translated)
        found = []
        kernel_lines = set(new_funcs.values()) | set(warp_function_uses(ls, set(new_funcs) | other_funcs))
        found += [Finding(RULES_BY_ID["WARP_KERNEL_USE"], i + 1) for i in sorted(kernel_lines)]
        added += attach_findings(ft, found)
    return added + alias_added


def _flag_alias_uses(files: list[FileTranslation]) -> int:
    """``VENDOR_ALIAS`` where a file uses another file's alias of a CUDA name HIP lacks."""
    defined: dict[str, dict[str, tuple[str, int]]] = {}
    for ft in files:
        if "define" in ft.translated:
            found = lacking_aliases("\n".join(code_lines(ft.translated)))
            if found:
                defined[ft.path] = found
    if not defined:
        return 0
    added = 0
    rule = RULES_BY_ID["VENDOR_ALIAS"]
    for ft in files:
        foreign = {a: (t, path, at) for path, found in defined.items() if path != ft.path
                   for a, (t, at) in found.items()}
        foreign = {a: v for a, v in foreign.items() if a in ft.translated}
        if not foreign:
            continue
        uses = alias_uses(code_lines(ft.translated), {a: (t, -1) for a, (t, _, _) in foreign.items()}, own=False)
        added += attach_findings(ft, [Finding(rule, k + 1, f"{a} is the project's alias of {foreign[a][0]} "
                                              f"({foreign[a][1]}:{foreign[a][2] + 1}), which HIP has no counterpart "
                                              "for: the alias hides the missing API at this call")
                                      for k, a in uses])
    return added


def _folder_unions(folders: dict[str, list[str]], facts: dict[str, set[str]]) -> dict[str, set[str]]:
    """{folder: the union of its files' ``facts``}."""
    return {folder: set().union(*(facts.get(p, set()) for p in paths)) for folder, paths in folders.items()}


def _included(path: str, by_path: dict[str, FileTranslation]) -> set[str]:
    """The other files of the tree that ``path`` includes: beside it, else from a folder above it (the root too)."""
    folder = posixpath.dirname(path)
    bases = [folder]
    while folder:
        folder = posixpath.dirname(folder)
        bases.append(folder)
    out = set()
    for inc in _INCLUDE.findall(by_path[path].translated):
        for base in bases:
            target = posixpath.normpath(posixpath.join(base, inc))
            if target in by_path:
                if target != path:
                    out.add(target)
                break
    return out


def _closure(direct: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each file's includes, direct or through other files of the tree (include cycles are fine)."""
    out: dict[str, set[str]] = {}
    for start in direct:
        seen: set[str] = set()
        todo = list(direct[start])
        while todo:
            p = todo.pop()
            if p in seen or p == start:
                continue
            seen.add(p)
            if p in out:  # already closed: take it whole
                seen |= out[p]
            else:
                todo.extend(direct.get(p, ()))
        seen.discard(start)
        out[start] = seen
    return out
