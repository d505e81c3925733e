"""Hunks between an original file and its translation, and rebuilding a file from accepted hunks.

Lines keep their line endings (``"x = 1;\\n"``; the last line may have none), so rebuilding a file from
its hunks is byte-exact, CRLF files included. Hunks are the non-equal difflib opcodes (one hunk per
contiguous change, so each can be accepted or rejected on its own), each with up to ``context`` unchanged
lines before and after. ``hunk_id`` is a hash of file, context and text: stable across re-runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from hipwizard.port.model import Hunk


def split_lines(text: str) -> list[str]:
    """Lines with their endings (only ``\\n`` and ``\\r\\n`` end a line, as compilers see it)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes, with the common head and tail stripped first (fast on big, mostly-equal files)."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    mid = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail], autojunk=False)
    return [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in mid.get_opcodes()]


def split_hunks(path: str, original: str, translated: str, context: int = 3) -> list[Hunk]:
    """The hunks turning ``original`` into ``translated`` (empty list when they are equal)."""
    if original == translated:
        return []
    a, b = split_lines(original), split_lines(translated)
    hunks: list[Hunk] = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            continue
        hunks.append(Hunk(
            file=path,
            old_start=i1 + 1,
            old_lines=a[i1:i2],
            new_start=j1 + 1,
            new_lines=b[j1:j2],
            context_before=a[max(0, i1 - context):i1],
            context_after=a[i2:i2 + context],
        ))
    return hunks


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
