"""Splitting a hunk into smaller ones, the way ``git add -p``'s ``s`` does.

A hunk can be split where its old and new sides share lines (the unchanged lines between two changes
become context), or, when it is one block replaced line for line (the usual hipify rename), into one
hunk per line. A block whose sides differ in length with no common line cannot be split.

Children get ids ``<parent id>.<n>`` so a split made on one machine is the same split on another, and a
re-translation that reproduces the parent reproduces its children.
"""

from __future__ import annotations

import difflib

from hipwizard.port.model import Hunk

CONTEXT = 3


def can_split(hunk: Hunk) -> bool:
    """True when ``split_hunk`` would return more than one piece."""
    return len(_pieces(hunk)) > 1


def split_hunk(hunk: Hunk) -> list[Hunk]:
    """The smaller hunks ``hunk`` splits into (in file order), or ``[hunk]`` when it cannot be split.

    Each piece keeps the parent's flags that point at its lines (flags without a line go to every piece).
    """
    pieces = _pieces(hunk)
    if len(pieces) <= 1:
        return [hunk]
    children: list[Hunk] = []
    old = hunk.old_lines
    for n, (i1, i2, j1, j2) in enumerate(pieces):
        # Context shown before a piece: the parent's own context, then the original lines before it.
        before = (hunk.context_before + old[:i1])[-CONTEXT:]
        after = (old[i2:] + hunk.context_after)[:CONTEXT]
        new_start = hunk.new_start + j1
        flags = [
            f for f in hunk.flags
            if f.line is None or new_start <= f.line < new_start + max(j2 - j1, 1)
        ]
        children.append(Hunk(
            file=hunk.file,
            old_start=hunk.old_start + i1,
            old_lines=list(old[i1:i2]),
            new_start=new_start,
            new_lines=list(hunk.new_lines[j1:j2]),
            context_before=list(before),
            context_after=list(after),
            flags=flags,
            hunk_id=f"{hunk.hunk_id}.{n + 1}",
        ))
    return children


def _pieces(hunk: Hunk) -> list[tuple[int, int, int, int]]:
    """Index ranges (old i1:i2, new j1:j2) of the separate changes inside a hunk."""
    old, new = hunk.old_lines, hunk.new_lines
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    changes = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    if len(changes) == 1:
        i1, i2, j1, j2 = changes[0]
        if i2 - i1 == j2 - j1 and i2 - i1 > 1:
            # One block renamed line by line: each line is its own decision.
            return [(i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1)]
    return changes
