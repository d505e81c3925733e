"""The dual-target change as one patch file ``git apply`` takes, run from the root of the CUDA tree.

``tree_patch(src, out, paths)`` diffs each of ``paths`` between the untouched tree ``src`` and the written
tree ``out`` (a file only in ``out``, the compat header, is a new file), in git's format: ``a/`` and ``b/``
prefixes, ``\\ No newline at end of file`` where a side ends without one.
"""

from __future__ import annotations

import difflib
from pathlib import Path


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def file_patch(rel: str, before: bytes | None, after: bytes | None, context: int = 3) -> str:
    """One file's diff (empty when nothing changed)."""
    if before == after:
        return ""
    a, b = _lines(before), _lines(after)
    head = [f"diff --git a/{rel} b/{rel}\n"]
    if before is None:
        head.append("new file mode 100644\n")
    body = []
    for line in difflib.unified_diff(a, b, "/dev/null" if before is None else f"a/{rel}",
                                     "/dev/null" if after is None else f"b/{rel}", n=context):
        if line.startswith(("---", "+++")):
            body.append(line if line.endswith("\n") else line + "\n")
            continue
        if line.endswith("\n"):
            body.append(line)
        else:
            body.append(line + "\n\\ No newline at end of file\n")
    return "".join(head + body)


def tree_patch(src: Path, out: Path, paths: list[str], context: int = 3) -> str:
    """The patch turning ``src`` into ``out`` for ``paths`` (sorted; files equal on both sides left out)."""
    parts = []
    for rel in sorted(set(paths)):
        before = (src / rel).read_bytes() if (src / rel).is_file() else None
        after = (out / rel).read_bytes() if (out / rel).is_file() else None
        parts.append(file_patch(rel, before, after, context))
    return "".join(p for p in parts if p)
