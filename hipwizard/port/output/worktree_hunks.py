"""The output folder's own hunks: each conflict between the user's edits and a new result, and each of the
user's edits to a file hipwizard wrote.

A write that meets conflicting edits keeps the user's file and leaves ``git merge-file``'s text with
conflict markers in the working-tree record (``worktree``). Each marked region is a **conflict hunk** to
decide on its own — ``mine`` (the user's lines) or ``new`` (the new result's lines); once every region of
a file is decided, the file is written from those choices (``compose``) and the new result becomes the base
of the next merge, so the regions kept as "mine" stay the user's edits. A choice is stored under the
region's content (``region_key``): a later write that produces the same region keeps it.

**Your edits** are the differences between what hipwizard last wrote and the user's file now: listed so the
user sees what every write keeps (nothing to decide).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from hipwizard.port.translation.hunks import split_lines
from hipwizard.port.translation.linediff import line_opcodes

OURS, SEP, THEIRS = "<<<<<<< yours", "=======", ">>>>>>> new result"
CONFLICT_CHOICES = ("mine", "new")


@dataclass(frozen=True)
class OutputHunk:
    kind: Literal["conflict", "yours"]
    file: str
    index: int  # 1-based, per file and kind
    line: int  # 1-based: in the merged text (conflict) or in the user's file (yours)
    old: list[str] = field(default_factory=list)  # conflict: your lines; yours: what hipwizard wrote
    new: list[str] = field(default_factory=list)  # conflict: the new result's lines; yours: your lines
    key: str = ""  # conflict: the region's content key (its choice is stored under it)
    choice: str = ""  # conflict: "mine" / "new" once decided

    @property
    def ref(self) -> str:
        """How the CLI names it: ``PATH#N``."""
        return f"{self.file}#{self.index}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "file": self.file, "index": self.index, "ref": self.ref, "line": self.line,
                "old": self.old, "new": self.new, **({"choice": self.choice} if self.kind == "conflict" else {})}


def region_key(mine: list[str], new: list[str]) -> str:
    h = hashlib.sha256()
    for part in (mine, new):
        h.update(b"".join(s.encode("utf-8", "surrogateescape") for s in part))
        h.update(b"\0\1")
    return h.hexdigest()[:16]


def _parse(lines: list[str]) -> list[tuple[int, int, list[str], list[str]]]:
    """(first line index, index after the region, mine, new) of each region with conflict markers."""
    regions, i = [], 0
    while i < len(lines):
        if lines[i].rstrip("\r\n") == OURS:
            start, side, j = i, 0, i + 1
            mine: list[str] = []
            new: list[str] = []
            while j < len(lines):
                bare = lines[j].rstrip("\r\n")
                if bare == SEP and side == 0:
                    side = 1
                elif bare == THEIRS and side == 1:
                    break
                else:
                    (mine if side == 0 else new).append(lines[j])
                j += 1
            if j >= len(lines):  # an unterminated marker is text, not a region
                break
            regions.append((start, j + 1, mine, new))
            i = j + 1
        else:
            i += 1
    return regions


def conflict_hunks(rel: str, merged: str, choices: dict[str, str]) -> list[OutputHunk]:
    """The conflict regions of ``merged`` (``git merge-file``'s text) as hunks, with the stored choices."""
    out = []
    for n, (start, _end, mine, new) in enumerate(_parse(split_lines(merged)), 1):
        key = region_key(mine, new)
        out.append(OutputHunk("conflict", rel, n, start + 1, mine, new, key, choices.get(key, "")))
    return out


def compose(merged: str, choices: dict[str, str]) -> str | None:
    """``merged`` with each conflict region replaced by its chosen side; None while one is undecided."""
    lines = split_lines(merged)
    parts, pos = [], 0
    for start, end, mine, new in _parse(lines):
        choice = choices.get(region_key(mine, new))
        if choice not in CONFLICT_CHOICES:
            return None
        parts += lines[pos:start]
        parts += mine if choice == "mine" else new
        pos = end
    return "".join(parts + lines[pos:])


def edit_hunks(rel: str, written: str, yours: str) -> list[OutputHunk]:
    """The user's edits: where ``yours`` differs from what hipwizard ``written`` there."""
    a, b = split_lines(written), split_lines(yours)
    out: list[OutputHunk] = []
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        if tag != "equal":
            out.append(OutputHunk("yours", rel, len(out) + 1, j1 + 1, a[i1:i2], b[j1:j2]))
    return out
