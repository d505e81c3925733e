"""The review state's file format: where it lives, how it reads back, and how it is written.

``<out>.review.json`` beside the output folder. One JSON object, one hunk and one decision per line so a
team can commit it and review in turns::

    {"version": 3, "kind": "hipwizard-review", "src": DIR, "out": DIR, "backend": NAME,
     "hip_version": "6.1.40093",              # HIP runtime the APIs were checked against ("" unknown)
     "revision": N, "last_write": {...} | null,
     "files": {PATH: {"sha256": HEX, "hunks": N}},
     "untouched": {PATH: [UntouchedRisk]},    # version 2: risks on lines the translation left as they were
     "diagnostics": {PATH: [Diagnostic]},     # optional: unsupported / too_new / removed APIs per file
     "decisions": {HUNK ID: Decision}, "hunks": [Hunk], "splits": {ID: {...}}, "history": [[...]],
     "vanished": [{"id", "file", "old_start", "old_lines", "new_lines", "decision"}],   # optional
     "environment": {...}}                    # optional: doctor.fingerprint of the translating machine

A decision is ``{"state", "lines"?, "changed"?, "before"?}``: ``changed`` with ``before`` (the earlier
decision) marks a hunk whose text changed since the user decided it. ``vanished`` lists decided hunks a
re-translation no longer produces (kept so nothing is dropped silently; a hunk that comes back gets its
decision again).

``src`` and ``out`` are relative to the state file's folder (version 3), so a copied migration folder
(sources, output, state) writes into its own copy; an absolute path (versions 1 and 2, or a folder on
another drive) is taken as it is. Version 1 files (before ``untouched``) still load. ``hip_version`` and ``diagnostics`` are optional keys: an
older hipwizard ignores them, a file without them reads as "none known".
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hipwizard.errors import UserError
from hipwizard.port.model import Hunk

REVIEW_VERSION = 3  # 2 added "untouched" (version 1 files load without it); 3: src/out relative to the state
KIND = "hipwizard-review"
DecisionState = Literal["pending", "accepted", "rejected", "edited"]
DECIDED = ("accepted", "rejected", "edited")


def state_path_for(out_dir: str | Path) -> Path:
    """Where the review state of output directory ``out_dir`` lives: ``<out>.review.json`` beside it."""
    out = Path(out_dir).expanduser().resolve()
    return out.parent / f"{out.name}.review.json"


def relative_to_state(state_path: Path, folder: Path) -> str:
    """``folder`` as written in the state file: relative to the state file's folder (``..`` allowed), or
    absolute when no relative path leads there (another drive)."""
    base = Path(state_path).expanduser().absolute().parent
    try:
        return Path(os.path.relpath(Path(folder).expanduser().absolute(), base)).as_posix()
    except ValueError:
        return str(folder)


def resolve_from_state(state_path: Path, stored: object) -> Path:
    """A ``src``/``out`` of the state file as a path: relative ones from the state file's folder."""
    if not isinstance(stored, str) or not stored:
        raise TypeError(f"a folder path is {stored!r}, not a string")
    p = Path(stored).expanduser()
    if p.is_absolute():
        return p
    return Path(os.path.normpath(Path(state_path).expanduser().absolute().parent / p))


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Decision:
    state: DecisionState = "pending"
    lines: list[str] | None = None  # the edited translated side, for ``edited``
    changed: bool = False  # came back pending because the sources changed
    before: dict | None = None  # with ``changed``: the decision made on this hunk's earlier text

    def to_dict(self) -> dict:
        d: dict = {"state": self.state}
        if self.lines is not None:
            d["lines"] = self.lines
        if self.changed:
            d["changed"] = True
        if self.before is not None:
            d["before"] = self.before
        return d

    @property
    def was(self) -> str:
        """The earlier decision's state ("accepted", ...) of a hunk changed since it was decided, else ""."""
        return str(self.before.get("state", "")) if self.before else ""

    @classmethod
    def from_dict(cls, d: dict) -> Decision:
        if not isinstance(d, dict):
            raise TypeError(f"a decision is {type(d).__name__}, not an object")
        state = d.get("state", "pending")
        if state not in ("pending",) + DECIDED:
            raise ValueError(f"unknown decision {state!r}")
        lines, before = d.get("lines"), d.get("before")
        if lines is not None and not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
            raise TypeError("a decision's lines are not a list of strings")
        if before is not None and not isinstance(before, dict):
            raise TypeError("a decision's before is not an object")
        return cls(state, lines, bool(d.get("changed", False)), before)


def read(path: Path) -> dict:
    """The parsed state file, checked for kind and version. Raises ``UserError`` (the file is kept)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no review state at {path} (run `hipwizard hipify SRC --out DIR` first)") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"review state {path} is unreadable ({exc}); it was kept as it is") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{path} is not a hipwizard review state; it was kept as it is")
    version = data.get("version")
    if not isinstance(version, int) or version > REVIEW_VERSION:
        raise UserError(f"review state {path} has version {version!r}, newer than this hipwizard understands "
                        f"({REVIEW_VERSION}); upgrade hipwizard — the file was kept as it is")
    return data


def check_rel(rel: object) -> str:
    """``rel`` when it is a path inside a folder (relative, no ``..``); else ``ValueError``."""
    if not isinstance(rel, str) or not rel or rel.startswith(("/", "\\")) or ".." in rel.replace("\\", "/").split("/") \
            or (len(rel) > 1 and rel[1] == ":"):
        raise ValueError(f"path {rel!r} would leave the source or output folder")
    return rel


def check_paths(files: dict, hunks) -> None:
    """Every file of a review (and every hunk's file) is a path inside the folders; ``files`` maps each to
    an object with a ``sha256`` string. Raises ``ValueError`` / ``TypeError`` on the first that is not."""
    if not isinstance(files, dict):
        raise TypeError("'files' is not an object")
    for rel, info in files.items():
        check_rel(rel)
        if not isinstance(info, dict) or not isinstance(info.get("sha256"), str):
            raise TypeError(f"file entry {rel!r} has no sha256 string")
    for h in hunks:
        check_rel(h.file)


def check_vanished(entries: object) -> list[dict]:
    if not isinstance(entries, list) or not all(isinstance(v, dict) and isinstance(v.get("id"), str)
                                                and isinstance(v.get("decision"), dict) for v in entries):
        raise TypeError("'vanished' is not a list of {id, decision} objects")
    return entries


class Writer:
    """Serialises a review to its one-line-per-entry JSON, caching the lines that rarely change (a hunk's
    line is the same until the hunk list is replaced; a decision's until it is replaced)."""

    def __init__(self) -> None:
        self._hunk_lines: dict[str, str] = {}  # hunk id -> its serialized JSON line
        self._decision_lines: dict[str, tuple[Decision, str]] = {}
        self._hunks_block: tuple[list | None, str] = (None, "")

    def forget_hunks(self) -> None:
        """Drop the cached hunk lines (after a reconcile: the same id may now carry other flags)."""
        self._hunk_lines.clear()

    def to_json(self, state, path: Path) -> str:
        """``state`` (a ``ReviewModel``) as the file at ``path`` holds it (``src``/``out`` relative to it)."""
        head = {"version": REVIEW_VERSION, "kind": KIND, "src": relative_to_state(path, state.src),
                "out": relative_to_state(path, state.out),
                "backend": state.backend, "hip_version": state.hip_version, "revision": state.revision,
                "last_write": state.last_write.to_dict() if state.last_write is not None else None}
        if state.environment:
            head["environment"] = state.environment
        parts = ["{\n"]
        parts += [f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items()]
        parts.append(_block("files", [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in state.files.items()], "{}"))
        parts.append(_block("untouched", [f"{json.dumps(k)}: {json.dumps([r.to_dict() for r in v])}"
                                          for k, v in state.untouched.items()], "{}"))
        if state.diagnostics:
            parts.append(_block("diagnostics", [f"{json.dumps(k)}: {json.dumps([d.to_dict() for d in v])}"
                                                for k, v in state.diagnostics.items()], "{}"))
        parts.append(_block("decisions", [self._decision_line(h.hunk_id, state.decision(h.hunk_id))
                                          for h in state.hunks], "{}"))
        if self._hunks_block[0] is not state.hunks:  # the hunk list is replaced (never mutated) on change
            self._hunks_block = (state.hunks, _block("hunks", [self._hunk_line(h) for h in state.hunks], "[]"))
        parts.append(self._hunks_block[1])
        parts.append(_block("splits", [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in state.splits.items()], "{}"))
        if state.vanished:
            parts.append(_block("vanished", [json.dumps(v) for v in state.vanished], "[]"))
        parts.append(_block("history", [json.dumps(e) for e in state.history], "[]", last=True))
        parts.append("}\n")
        return "".join(parts)

    def _decision_line(self, hunk_id: str, d: Decision) -> str:
        # Decisions are replaced, never mutated: a cached line is valid while its object is the same.
        cached = self._decision_lines.get(hunk_id)
        if cached is None or cached[0] is not d:
            cached = self._decision_lines[hunk_id] = (d, f"{json.dumps(hunk_id)}: {json.dumps(d.to_dict())}")
        return cached[1]

    def _hunk_line(self, h: Hunk) -> str:
        line = self._hunk_lines.get(h.hunk_id)
        if line is None:
            line = json.dumps(h.to_dict(), ensure_ascii=False)
            if not line.isascii():
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:  # undecodable source bytes (surrogate escapes): keep them as \u escapes
                    line = json.dumps(h.to_dict())
            self._hunk_lines[h.hunk_id] = line
        return line


def _block(name: str, rows: list[str], empty: str, *, last: bool = False) -> str:
    tail = "" if last else ","
    if not rows:
        return f"  {json.dumps(name)}: {empty}{tail}\n"
    open_, close = empty[0], empty[1]
    return f"  {json.dumps(name)}: {open_}\n    " + ",\n    ".join(rows) + f"\n  {close}{tail}\n"
