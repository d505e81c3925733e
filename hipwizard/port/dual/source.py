"""One CUDA source in dual-target form: the CUDA text kept, guarded branches only where AMD must differ.

``dual_source(ft, options, header)`` walks the translator's hunks of ``ft`` (a fork-mode ``FileTranslation``):
lines whose change is a rename stay as they are (their renames go to the compat header); swapped CUDA headers
become an ``include`` branch (the HIP headers and the compat header on AMD, the CUDA ones else); any other
change is a ``code`` branch (the translation on AMD, the CUDA lines else); a 32-lane warp constant the risk
rules flagged becomes a ``warp-size`` branch with 64 on AMD (gfx9 wavefronts); a one-line statement calling a
CUDA API with no HIP counterpart is a ``no-hip`` branch (left out on AMD, flagged for the review). A branch never cuts a macro
continued with backslashes: it takes the whole macro.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from hipwizard.port.dual.classify import classify, is_include
from hipwizard.port.dual.model import Branch, DualOptions
from hipwizard.port.model import FileTranslation, UntouchedRisk
from hipwizard.port.translation.hunks import split_lines
from hipwizard.port.translation.lexer import mask_non_code

UNITS = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")
_WARP_CONST = re.compile(r"^(?P<head>\s*(?:#\s*define\s+\w+\s+\(?|(?:static\s+)?(?:constexpr|const)\s+[\w\s]*?\w+\s*=\s*))"
                         r"(?P<n>32)(?P<tail>[uU]?\b.*)$", re.S)
_RANK = {"same": 0, "rename": 1, "include": 2, "cond": 3, "no-hip": 4, "code": 5, "warp-size": 5}
_WORD = re.compile(r"[A-Za-z_]\w*")
# a call made for its effect, on one line: `f(...);` / `check(f(...));`, never a return, declaration or assignment
_CALL_STATEMENT = re.compile(r"^\s*(?!return\b)[A-Za-z_][\w:]*\s*\(.*\)\s*;\s*$", re.S)
_COND = re.compile(r"^(?P<lead>\s*#\s*)(?P<kw>if|elif|ifdef|ifndef)\b(?P<expr>.*?)(?P<end>\r?\n?)$", re.S)


@dataclass
class _Unit:
    old: list[str]
    new: list[str]
    kind: str


@dataclass(frozen=True)
class Edit:
    """One change of the dual text: ``old`` (the original's lines from 1-based ``start``) became ``new``."""

    start: int
    old: list[str]
    new: list[str]


@dataclass
class DualSource:
    """The dual text of one file, its branches, the renames its unchanged lines rely on, the HIP headers
    its include branches name, and where each original line now sits (1-based)."""

    text: str
    branches: list[Branch] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    unguarded: list[int] = field(default_factory=list)  # original lines of changes no branch could hold
    renames: dict[str, str] = field(default_factory=dict)
    line_map: dict[int, int] = field(default_factory=dict)


def header_include(path: str, header: str) -> str:
    """The include of the compat header from the file at ``path`` (both relative to the tree's root)."""
    rel = os.path.relpath(header, PurePosixPath(path).parent.as_posix() or ".")
    return f'#include "{PurePosixPath(rel).as_posix()}"'


def _units(ft: FileTranslation, known: dict[str, str]) -> tuple[list[_Unit], dict[str, str]]:
    """The file as units in order: unchanged lines, and each hunk split into line pairs where it keeps its
    line count; the renames found."""
    lines = split_lines(ft.original)
    units: list[_Unit] = []
    found: dict[str, str] = {}
    pos = 0
    for h in sorted(ft.hunks, key=lambda h: h.old_start):
        start = h.old_start - 1 if h.old_lines else h.old_start - 1 if h.old_start > 0 else 0
        units.extend(_Unit([x], [x], "same") for x in lines[pos:start])
        if len(h.old_lines) == len(h.new_lines):
            for o, n in zip(h.old_lines, h.new_lines, strict=True):
                kind, pairs = classify(o, n, {**known, **found})
                found.update(pairs)
                units.append(_Unit([o], [n], kind))
        else:
            both = [x for x in h.old_lines + h.new_lines if x.strip()]
            added = len(h.new_lines) - len(h.old_lines)
            if both and all(is_include(x) for x in both):
                units.append(_Unit(list(h.old_lines), list(h.new_lines), "include"))
            elif added > 0 and all(is_include(x) for x in h.new_lines[:added]):
                # a HIP include added above a changed line: the include apart, the rest line for line
                units.append(_Unit([], list(h.new_lines[:added]), "include"))
                for o, n in zip(h.old_lines, h.new_lines[added:], strict=True):
                    kind, pairs = classify(o, n, {**known, **found})
                    found.update(pairs)
                    units.append(_Unit([o], [n], kind))
            else:
                units.append(_Unit(list(h.old_lines), list(h.new_lines), "code"))
        pos = start + len(h.old_lines)
    units.extend(_Unit([x], [x], "same") for x in lines[pos:])
    return units, found


_NVIDIA_ONLY = re.compile(r"^\s*#\s*include\s*[<\"](?:nvtx3/|nvToolsExt)")


def _nvidia_only(units: list[_Unit]) -> None:
    """Includes of NVIDIA-only headers that have no HIP counterpart (NVTX): left out of the AMD build, their
    calls made no-ops by the compat header."""
    for u in units:
        if u.kind == "same" and len(u.old) == 1 and _NVIDIA_ONLY.match(u.old[0]):
            u.kind, u.new = "include", []


def _no_hip_units(units: list[_Unit], no_hip: frozenset[str]) -> None:
    """A one-line call statement (``f(...);``, no return, declaration or assignment) using a host CUDA API HIP
    has no counterpart for (HIPIFY's tables: no HIP name): left out of the AMD build, as a branch the review
    shows flagged."""
    if not no_hip:
        return
    for u in units:
        if u.kind not in ("same", "rename") or len(u.old) != 1:
            continue
        code = mask_non_code(u.old[0])
        if _CALL_STATEMENT.match(code) and any(w in no_hip for w in _WORD.findall(code)):
            u.kind, u.new = "no-hip", []


def _warp_units(ft: FileTranslation, units: list[_Unit]) -> None:
    """Flagged 32-lane constants (``#define WARP_SIZE 32``) on unchanged lines: a branch with 64 on AMD."""
    lines = {r.old_line for r in UntouchedRisk.of(ft) if r.flag.rule_id == "WARP32_LITERAL" and r.old_line}
    n = 0
    for u in units:
        if u.kind == "same" and n + 1 in lines:
            m = _WARP_CONST.match(u.old[0])
            if m:
                u.new = [m.group("head") + "64" + m.group("tail")]
                u.kind = "warp-size"
        n += len(u.old)


def _conditions(units: list[_Unit]) -> None:
    """A changed ``#if``/``#elif``/``#ifdef``/``#ifndef`` line: its test chosen inline by the guard
    (``#if (AMD) ? (new) : (old)``), so no branch opens inside another conditional."""
    for u in units:
        if u.kind != "code" or len(u.old) != 1 or len(u.new) != 1:
            continue
        a, b = _COND.match(u.old[0]), _COND.match(u.new[0])
        if a and b and a.group("kw") == b.group("kw") and not a.group("expr").rstrip().endswith("\\"):
            u.kind = "cond"
            u.new = [a.group("lead") + a.group("kw").replace("ifdef", "if").replace("ifndef", "if") + " "
                     + "{cond}" + f" ? ({_test(b)}) : ({_test(a)})" + a.group("end")]


def _test(m: re.Match) -> str:
    expr = m.group("expr").split("//", 1)[0].strip()
    if m.group("kw") == "ifdef":
        return f"defined({expr})"
    if m.group("kw") == "ifndef":
        return f"!defined({expr})"
    return expr


def _join_continued(units: list[_Unit]) -> list[_Unit]:
    """Units joined where a line ends in a backslash (a macro or a directive goes on): a branch must hold
    the whole logical line. Joined, the unit takes the strongest kind."""
    out: list[_Unit] = []
    for u in units:
        prev = out[-1] if out else None
        if prev is not None and prev.old and prev.old[-1].rstrip("\r\n").endswith("\\"):
            prev.old += u.old
            prev.new += u.new
            prev.kind = max(prev.kind, u.kind, key=_RANK.__getitem__)
            if prev.kind == "rename" and prev.old == prev.new:
                prev.kind = "same"
        else:
            out.append(_Unit(list(u.old), list(u.new), u.kind))
    return out


def dual_source(ft: FileTranslation, options: DualOptions, known: dict[str, str] | None = None,
                no_hip: frozenset[str] = frozenset()) -> DualSource:
    """The dual-target text of ``ft`` (see the module's docstring). ``known``: renames already taken from
    other files (a name the translator mapped differently here becomes a branch); ``no_hip``: CUDA names with
    no HIP counterpart and no compat fallback (a statement calling one is left out on AMD, flagged)."""
    units, found = _units(ft, dict(known or {}))
    _no_hip_units(units, no_hip)
    _warp_units(ft, units)
    _nvidia_only(units)
    _conditions(units)
    units = _join_continued(units)
    eol = "\r\n" if ft.original.split("\n", 1)[0].endswith("\r") else "\n"
    is_unit = PurePosixPath(ft.path).suffix in UNITS
    out: list[str] = []
    result = DualSource("")
    compat_done = False
    old_line = 0
    i = 0
    while i < len(units):
        u = units[i]
        if u.kind in ("same", "rename"):
            for x in u.old:
                old_line += 1
                result.line_map[old_line] = len(out) + 1
                out.append(x)
            i += 1
            continue
        if u.kind == "cond":
            old_line += 1
            result.line_map[old_line] = len(out) + 1
            line = u.new[0].replace("{cond}", f"({options.condition})")
            result.edits.append(Edit(old_line, list(u.old), [line]))
            out.append(line)
            i += 1
            continue
        j = i
        while j + 1 < len(units) and units[j + 1].kind == u.kind:  # a run of one kind is one branch
            j += 1
        old = [x for k in range(i, j + 1) for x in units[k].old]
        new = [x for k in range(i, j + 1) for x in units[k].new]
        kind = u.kind
        if kind == "code" and not (_balanced(old) and _balanced(new)):
            # a branch would cut a conditional of the file's own: the CUDA lines stay, the review flags the place
            for x in old:
                old_line += 1
                result.line_map[old_line] = len(out) + 1
                out.append(x)
            result.unguarded.append(old_line - len(old) + 1)
            i = j + 1
            continue
        if kind == "include":
            new = [x for x in new if x.strip()]
            if not old and not is_unit:
                # a HIP include the translator added to a header: its includer brings the compat header
                i = j + 1
                continue
            if not compat_done:
                new.append(header_include(ft.path, options.header) + eol)
                compat_done = True
        start = len(out) + 1
        block = [f"#if {options.condition}{eol}", *_ended(new, eol)]
        if not new:  # nothing on AMD: the CUDA lines only
            block = [f"#if !({options.condition}){eol}"]
            block.extend(_ended(old, eol))
        elif old:
            block.append(f"#else{eol}")
            block.extend(_ended(old, eol))
        block.append(f"#endif{eol}")
        if old_line == 0 and old and old[0].startswith("\ufeff"):  # a byte-order mark stays the file's first
            block = ["\ufeff" + block[0]] + [x.replace("\ufeff", "", 1) if x == old[0] else x for x in block[1:]]
        result.edits.append(Edit(old_line + 1, old, block))
        for k in range(len(old)):
            result.line_map[old_line + 1 + k] = start + len(new) + 2 + k
        old_line += len(old)
        out.extend(block)
        result.branches.append(Branch(ft.path, start, kind, len(new)))  # type: ignore[arg-type]
        i = j + 1
    if out and ft.original and not ft.original.endswith("\n") and out[-1].endswith("\n") and \
            not out[-1].startswith("#endif"):
        out[-1] = out[-1].rstrip("\r\n")
    result.text = "".join(out)
    result.renames = found
    return result


_OPEN = re.compile(r"^\s*#\s*if(?:n?def)?\b")
_MID = re.compile(r"^\s*#\s*(?:else|elif)\b")
_CLOSE = re.compile(r"^\s*#\s*endif\b")


def _balanced(lines: list[str]) -> bool:
    """Whether ``lines`` close every conditional they open and touch none they did not open."""
    depth = 0
    for x in lines:
        if _OPEN.match(x):
            depth += 1
        elif _MID.match(x) and depth == 0 or _CLOSE.match(x) and depth == 0:
            return False
        elif _CLOSE.match(x):
            depth -= 1
    return depth == 0


def _ended(lines: list[str], eol: str) -> list[str]:
    """Lines each ending in a line break (a file's last line may lack one; inside a branch it cannot)."""
    return [x if x.endswith("\n") else x + eol for x in lines]
