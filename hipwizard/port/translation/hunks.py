"""Hunks between an original file and its translation, and rebuilding a file from accepted hunks.

Lines keep their line endings (``"x = 1;\\n"``; the last line may have none), so rebuilding a file from
its hunks is byte-exact, CRLF files included. Hunks are the non-equal opcodes of a line diff (one hunk per
contiguous change, so each can be accepted or rejected on its own), each with up to ``context`` unchanged
lines before and after. The built-in translator's hunks come from its edit log (``hunks_from_edits``), an
external tool's from ``linediff`` (near-linear on code); both give the boundaries difflib gave. ``hunk_id`` is a
hash of file, context and text: stable across re-runs. Two hunks of one file can hash alike (the same change
after the same lines, twice): the first keeps the hash, the n-th later one in file order gets ``<hash>-n``
(``unique_ids``), so every id names one hunk and a re-run gives the same ids again.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from hipwizard.port.model import SEVERITY_ORDER, Hunk
from hipwizard.port.translation.edits import Span
from hipwizard.port.translation.linediff import line_opcodes


def split_lines(text: str) -> list[str]:
    """Lines with their endings (only ``\\n`` and ``\\r\\n`` end a line, as compilers see it)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def split_hunks(path: str, original: str, translated: str, context: int = 3) -> list[Hunk]:
    """The hunks turning ``original`` into ``translated`` (empty list when they are equal)."""
    if original == translated:
        return []
    a, b = split_lines(original), split_lines(translated)
    return unique_ids(_hunks(path, a, line_opcodes(a, b), a, b, 0, 0, context))


def unique_ids(hunks: list[Hunk]) -> list[Hunk]:
    """``hunks`` (one file's, in file order) with every id unique: a repeat of an earlier hunk's id gets
    ``-2``, ``-3``... by its occurrence (stable across re-runs: the same text gives the same order). Returns
    the same list, changed in place."""
    seen: dict[str, int] = {}
    for h in hunks:
        n = seen[h.hunk_id] = seen.get(h.hunk_id, 0) + 1
        if n > 1:
            h.hunk_id = f"{h.hunk_id}-{n}"
    return hunks


def hunks_from_edits(path: str, original: str, translated: str, spans: list[Span], context: int = 3) -> list[Hunk]:
    """The hunks of a translation whose changed ``spans`` are known (the built-in translator's edit log): the
    lines the spans touch, grouped where they touch, each group diffed on its own. Same boundaries and ids
    as ``split_hunks``; time grows with the file and the changes, never with their product."""
    if not spans:
        return []
    a = split_lines(original)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    groups: list[list[int]] = []  # [first line, end line, first span, last span] (0-based, end exclusive)
    for n, sp in enumerate(spans):
        first = min(bisect.bisect_right(starts, sp.start) - 1, len(a))
        last = bisect.bisect_right(starts, sp.end - 1) if sp.end > sp.start else first + 1
        last = min(max(last, first), len(a))
        if groups and first <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], last)
            groups[-1][3] = n
        else:
            groups.append([first, last, n, n])
    # A group must end on a line end of the translation too (a replacement may have dropped a newline):
    # else it takes the next line, and any group that then touches it.
    k = 0
    while k < len(groups):
        g = groups[k]
        while g[1] < len(a):
            t_end = spans[g[3]].new_end + (starts[g[1]] - spans[g[3]].end)
            if translated[t_end - 1] == "\n":
                break
            g[1] += 1
            while k + 1 < len(groups) and groups[k + 1][0] <= g[1]:
                g[1], g[3] = max(g[1], groups[k + 1][1]), groups[k + 1][3]
                del groups[k + 1]
        k += 1
    hunks: list[Hunk] = []
    added = 0  # lines the groups before this one added (unchanged text between groups keeps its lines)
    for first, last, s0, s1 in groups:
        old = a[first:last]
        t_start = spans[s0].new_start - (spans[s0].start - starts[first])
        t_end = spans[s1].new_end + (starts[last] - spans[s1].end)
        new = split_lines(translated[t_start:t_end])
        hunks.extend(_hunks(path, a, line_opcodes(old, new), old, new, first, first + added, context))
        added += len(new) - len(old)
    return unique_ids(hunks)


def _hunks(path: str, a: list[str], ops, old: list[str], new: list[str], a_off: int, b_off: int,
           context: int) -> list[Hunk]:
    """Hunks for the non-equal ``ops`` of ``old``/``new``, which start at line ``a_off``/``b_off`` (0-based)
    of the original ``a`` and of the translation."""
    out: list[Hunk] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        lo, hi = i1 + a_off, i2 + a_off
        out.append(Hunk(
            file=path,
            old_start=lo + 1,
            old_lines=old[i1:i2],
            new_start=j1 + b_off + 1,
            new_lines=new[j1:j2],
            context_before=a[max(0, lo - context):lo],
            context_after=a[hi:hi + context],
        ))
    return out


def flagged_counts(hunks: Iterable[Hunk]) -> dict[str, int]:
    """The one count of "flagged" everywhere (hipify, ``review --summary``, the Port screen): hunks with at
    least one risk flag, each counted once under its highest severity; ``total`` is their sum. Risks on lines
    the translation left unchanged are not hunks: they are "manual edits", counted apart."""
    c = dict.fromkeys(SEVERITY_ORDER, 0)
    for h in hunks:
        if h.flags and h.max_severity is not None:  # flags give a severity
            c[h.max_severity] += 1
    return {**c, "total": sum(c.values())}


def apply_hunks(original: str, hunks: Iterable[Hunk], accepted: Iterable[str]) -> str:
    """``original`` with the hunks whose id is in ``accepted`` applied; every other hunk keeps the original
    text. Hunks must come from ``split_hunks`` on this same ``original`` (they never overlap)."""
    keep = set(accepted)
    lines = split_lines(original)
    out: list[str] = []
    pos = 0
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        start = hunk.old_start - 1
        if lines[start:start + len(hunk.old_lines)] != hunk.old_lines:
            raise ValueError(f"hunk {hunk.hunk_id} does not match {hunk.file} at line {hunk.old_start}")
        out.extend(lines[pos:start])
        out.extend(hunk.new_lines if hunk.hunk_id in keep else hunk.old_lines)
        pos = start + len(hunk.old_lines)
    out.extend(lines[pos:])
    return "".join(out)


def hunk_at_line(hunks: Iterable[Hunk], accepted: Iterable[str], line: int) -> Hunk | None:
    """Which hunk produced ``line`` (1-based) of the file ``apply_hunks`` wrote with these decisions.

    Lets a compiler error in the written file jump to its hunk. A line outside every hunk -> None.
    """
    keep = set(accepted)
    shift = 0  # written line number minus original line number, before the current hunk
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        lines = hunk.new_lines if hunk.hunk_id in keep else hunk.old_lines
        first = hunk.old_start + shift
        if first <= line < first + max(len(lines), 1) and (lines or line == first):
            return hunk
        shift += len(lines) - len(hunk.old_lines)
    return None
