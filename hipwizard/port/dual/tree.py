"""A translated tree in dual-target form: each file's dual text as a review file, and the compat header.

``dual_tree(files, options)`` takes the fork-mode translations of a tree (``translation.engine.port_tree``)
and gives back ``DualTree``: per file a ``FileTranslation`` from the CUDA original to its dual-target text
(``source.dual_source`` for CUDA sources, ``build.dual_build_file`` for build files, the translation as it is
for Python files, which the Python rules keep valid on either torch), so the same hunk review, flags, decisions
and write serve this mode; the renames the unchanged lines rely on; the compat header's text. Every flag of
the translation is carried to the dual file's line that holds the same original line (on its hunk, else as a
manual edit): a flagged rename is reviewed, only not as a branch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hipwizard.port.buildfiles.review import BACKEND as BUILD_BACKEND
from hipwizard.port.buildfiles.review import attach_flags
from hipwizard.port.dual.build import dual_build_file
from hipwizard.port.dual.classify import renames as rename_pairs
from hipwizard.port.dual.compat import INTRINSICS, compat_header, used_intrinsics
from hipwizard.port.dual.model import Branch, DualOptions
from hipwizard.port.dual.source import Edit, dual_source
from hipwizard.port.model import FileTranslation, Hunk, RiskFlag, UntouchedRisk
from hipwizard.port.pyscan.translation import BACKEND as PY_BACKEND
from hipwizard.port.translation.hunks import split_lines, unique_ids
from hipwizard.port.translation.lexer import mask_non_code
from hipwizard.port.translation.overloads import RULES as OVERLOADS
from hipwizard.port.translation.tables import load_tables

_WORD = re.compile(r"[A-Za-z_]\w*")
NO_HIP = RiskFlag("DUAL_NO_HIP", "med", "calls a CUDA API HIP has no counterpart for: the dual-target tree leaves "
                  "this statement out of the AMD build", "check the AMD build does without it, or edit the AMD side "
                  "of the branch (accept keeps it out, reject keeps it in and the AMD build fails)")


@dataclass
class DualTree:
    files: list[FileTranslation]
    header: str
    renames: dict[str, str] = field(default_factory=dict)
    intrinsics: list[str] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)

    def summary(self) -> dict:
        kinds: dict[str, int] = {}
        for b in self.branches:
            kinds[b.kind] = kinds.get(b.kind, 0) + 1
        return {"renames": len(self.renames), "intrinsics": self.intrinsics, "branches": len(self.branches),
                "branches_by_kind": dict(sorted(kinds.items()))}


def dual_tree(files: list[FileTranslation], options: DualOptions, context: int = 3) -> DualTree:
    """The dual-target form of ``files`` (see the module's docstring)."""
    renames: dict[str, str] = {}
    branches: list[Branch] = []
    out: list[FileTranslation] = []
    masked: list[str] = []
    no_hip = _no_hip_names(files)
    preferred = _preferred_renames(files)
    for ft in files:
        if ft.backend == PY_BACKEND:
            out.append(ft)
            continue
        unguarded: list[int] = []
        if ft.backend == BUILD_BACKEND:
            text, found, edits = dual_build_file(ft, options)
        else:
            ds = dual_source(ft, options, {**preferred, **renames}, no_hip)
            text, found, edits, unguarded = ds.text, ds.branches, ds.edits, ds.unguarded
            renames.update((k, v) for k, v in ds.renames.items() if k not in renames)
            masked.append(mask_non_code(ft.original))
        branches.extend(found)
        dual = _carried(ft, text, edits, context)
        attach_flags(dual, [_at(NO_HIP, b.line) for b in found if b.kind == "no-hip"])
        where = _line_map(dual.hunks)
        attach_flags(dual, [_at(UNGUARDED, where(n)) for n in unguarded])
        out.append(dual)
    intrinsics = used_intrinsics(masked)
    return DualTree(out, compat_header(renames, intrinsics, options), renames, intrinsics, branches)


UNGUARDED = RiskFlag("DUAL_UNGUARDED", "high", "the translator changed this line, but a branch here would cut one "
                     "of the file's own #if/#else blocks: the dual-target tree keeps the CUDA line for both builds",
                     "write the AMD version by hand (a branch around the whole #if block)")


def _preferred_renames(files: list[FileTranslation]) -> dict[str, str]:
    """For each CUDA name the translator renamed, the HIP name it chose most often across the tree: the compat
    header's macro; a line where it chose another (``cudaEventCreate(&e, flags)`` ->
    ``hipEventCreateWithFlags``) becomes a branch, not the macro every other line then contradicts.

    A name CUDA overloads by argument count (``translation.overloads``) keeps its plain HIP name as the macro
    even where the tree calls only the other form: the macro must stay right for the plain call (a header's
    ``cudaEventCreate(&e)``, or the next one the user writes); each call of the other form is a branch."""
    counts: dict[str, dict[str, int]] = {}
    for ft in files:
        if ft.backend in (BUILD_BACKEND, PY_BACKEND):
            continue
        for h in ft.hunks:
            if len(h.old_lines) != len(h.new_lines):
                continue
            for o, n in zip(h.old_lines, h.new_lines, strict=True):
                for cuda, hip in rename_pairs(o, n) or []:
                    by = counts.setdefault(cuda, {})
                    by[hip] = by.get(hip, 0) + 1
    tables = load_tables()
    preferred = {}
    for cuda, by in counts.items():
        variants = {o.hip for o in OVERLOADS.get(cuda, ()) if o.hip}
        mapping = tables.get(cuda) if variants else None
        plain = mapping.hip if mapping is not None else None
        preferred[cuda] = plain or max(sorted(by), key=by.__getitem__)
    return preferred


def _no_hip_names(files: list[FileTranslation]) -> frozenset[str]:
    """Host-API CUDA names the sources use that HIPIFY's tables give no HIP name and the compat header no
    fallback (device names are left to the review: the tables lack many that HIP has, bf16's among them)."""
    words: set[str] = set()
    for ft in files:
        if ft.backend not in (BUILD_BACKEND, PY_BACKEND):
            words.update(_WORD.findall(mask_non_code(ft.original)))
    tables = load_tables()
    found = set()
    for w in words:
        m = tables.get(w)
        if m is not None and not m.hip and m.family != "device" and w not in INTRINSICS:
            found.add(w)
    return frozenset(found)


def _line_map(hunks: list[Hunk]):
    """Original line -> line of the new text: exact outside the hunks, a hunk's first new line inside it."""
    spans = sorted((h.old_start, len(h.old_lines), h.new_start, len(h.new_lines)) for h in hunks)

    def where(n: int) -> int:
        shift = 0
        for o, olen, nw, nlen in spans:
            if n < o:
                break
            if n < o + olen or (olen == 0 and n == o):
                return nw
            shift = nw + nlen - (o + olen)
        return n + shift

    return where


def edit_hunks(path: str, original: str, edits: list[Edit], context: int = 3) -> list[Hunk]:
    """One hunk per edit (a branch is decided whole: never its ``#if`` without its ``#endif``)."""
    a = split_lines(original)
    hunks, added = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        lo = e.start - 1
        hunks.append(Hunk(file=path, old_start=e.start, old_lines=list(e.old), new_start=e.start + added,
                          new_lines=list(e.new), context_before=a[max(0, lo - context):lo],
                          context_after=a[lo + len(e.old):lo + len(e.old) + context]))
        added += len(e.new) - len(e.old)
    return unique_ids(hunks)


def _carried(ft: FileTranslation, text: str, edits: list[Edit], context: int) -> FileTranslation:
    """The review file from ``ft.original`` to ``text`` with ``ft``'s flags on the lines that hold theirs."""
    hunks = edit_hunks(ft.path, ft.original, edits, context) if ft.backend != BUILD_BACKEND or edits else \
        list(ft.hunks)
    dual = FileTranslation(path=ft.path, original=ft.original, translated=text, backend=ft.backend, hunks=hunks,
                           diagnostics=list(ft.diagnostics), stats=dict(ft.stats), encoding=ft.encoding)
    where = _line_map(hunks)
    flags: list[RiskFlag] = []
    for h in ft.hunks:
        for f in h.flags:
            k = (f.line or h.new_start) - h.new_start
            old = h.old_start + (k if 0 <= k < len(h.old_lines) else 0)
            flags.append(_at(f, where(old)))
    for r in UntouchedRisk.of(ft):
        if r.old_line:
            flags.append(_at(r.flag, where(r.old_line)))
    attach_flags(dual, flags)
    return dual


def _at(flag: RiskFlag, line: int) -> RiskFlag:
    return RiskFlag(flag.rule_id, flag.severity, flag.reason, flag.hint, flag.source, line)
