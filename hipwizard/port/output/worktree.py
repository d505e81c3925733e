"""The output folder as a working tree: what hipwizard wrote there, and how a new write meets the user's edits.

hipwizard keeps, beside the output folder ``<out>``, a folder ``<out>.written/`` that it alone owns::

    <out>.written/manifest.json   {"version": 1, "kind": "hipwizard-written",
                                   "files": {PATH: SHA256},            # what hipwizard last wrote, per file
                                   "conflicts": {PATH: {"count": N, "why": TEXT,   # writes that met edits
                                                        "choices": {REGION KEY: "mine"|"new"}}},
                                   "environment": {...}}   # doctor.fingerprint of the last write's machine
    <out>.written/base/PATH       the bytes hipwizard last wrote (the base of a three-way merge)
    <out>.written/new/PATH        in conflict: the new result that was not written
    <out>.written/merged/PATH     in conflict: the merge with conflict markers
    <out>.written/next/PATH       while PATH is written: its new base (``landing/PATH``: a merge's text)

Writing a file (``WorkTree.place``) never overwrites what hipwizard did not write:

- absent, the same as the new result, or exactly what hipwizard last wrote: the new result is written;
- edited by the user since: merged three ways with ``git merge-file`` (base = last written, ours = the
  user's file, theirs = the new result) through the runner seam. A clean merge is written (status
  ``merged``); a conflicting one leaves the user's file untouched (``conflict``) until the user resolves it:
  the whole file (``resolve``: keep ``mine``, take ``new``, or write ``merged`` with conflict markers), or
  region by region (``choose``: each conflict is a hunk of its own, ``worktree_hunks``). Without git, an
  edited file is never overwritten (``conflict``, saying why);
- a file hipwizard never wrote is the user's: kept (``conflict``) unless ``force``.

While a file is written, ``next/PATH`` (and ``landing/PATH`` for a merge) holds what is going there; once
the file is written it becomes the base. A write killed at any point is settled by the next one (the file
holds the landing text: the write happened; else it did not), so a kill never turns hipwizard's own output
into a "user edit". Leftover temp files of a killed atomic write
(``.<name>.XXXXXXXX.tmp``) beside a file hipwizard writes are removed when it writes that file again, and
every one in ``<out>.written/`` each time the record is saved (``sweep_temps``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hipwizard.atomic import atomic_write_bytes, atomic_write_json, fsync_dir
from hipwizard.errors import UserError
from hipwizard.port.output.worktree_hunks import (
    CONFLICT_CHOICES,
    OutputHunk,
    compose,
    conflict_hunks,
    edit_hunks,
)
from hipwizard.port.review.file_format import check_rel, fingerprint
from hipwizard.runner import Runner, SubprocessRunner

KIND = "hipwizard-written"
Placement = Literal["written", "merged", "kept", "conflict"]
Choice = Literal["mine", "new", "merged"]
CHOICES = ("mine", "new", "merged")
MERGE_TIMEOUT_S = 120.0


def record_dir(out: Path) -> Path:
    """``<out>.written/`` beside the output folder."""
    out = Path(out)
    return out.parent / f"{out.name}.written"


@dataclass
class Placed:
    status: Placement
    detail: str = ""
    conflicts: int = 0


@dataclass(frozen=True)
class WorktreeStatus:
    """The output folder as a working tree: the files whose write met the user's edits (path -> why), the
    files the user edited since hipwizard wrote them, and a damaged record's one-line ``error``."""

    conflicts: dict[str, str] = field(default_factory=dict)
    edited: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict:
        return {"conflicts": dict(self.conflicts), "edited": list(self.edited),
                **({"error": self.error} if self.error is not None else {})}


@dataclass
class WorkTree:
    """What hipwizard wrote into ``out`` (``files``: path -> sha256) and the writes left in conflict."""

    out: Path
    files: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, dict] = field(default_factory=dict)
    runner: Runner | None = None  # the runner seam for `git merge-file` (default: the real one)
    environment: dict | None = None  # doctor.fingerprint of the machine of the last write

    @classmethod
    def load(cls, out: Path, runner=None) -> WorkTree:
        """The record beside ``out`` (empty when hipwizard never wrote there). A damaged record raises
        ``UserError`` naming it (it is kept as it is)."""
        path = record_dir(out) / "manifest.json"
        tree = cls(Path(out), runner=runner)
        if not path.exists():
            return tree
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("kind") != KIND:
                raise ValueError("not a hipwizard record")
            files, conflicts = data.get("files", {}), data.get("conflicts", {})
            if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                raise TypeError("'files' is not an object of sha256 strings")
            if not isinstance(conflicts, dict) or not all(isinstance(v, dict) for v in conflicts.values()):
                raise TypeError("'conflicts' is not an object of objects")
            for rel in [*files, *conflicts]:
                check_rel(rel)
        except (OSError, ValueError, TypeError) as exc:
            raise UserError(f"the record of what hipwizard wrote, {path}, is damaged ({exc}); "
                            "it was kept as it is (move it away to treat every file as yours)") from None
        tree.files, tree.conflicts = dict(files), dict(conflicts)
        tree.environment = data["environment"] if isinstance(data.get("environment"), dict) else None
        return tree

    @property
    def known(self) -> bool:
        """hipwizard has written into this folder before (a first write killed before its manifest counts)."""
        return record_dir(self.out).is_dir()

    def sweep_temps(self) -> int:
        """Remove every temp file a killed write left in hipwizard's own record folder (``<out>.written``), in
        one walk (a write that finds its file already in place rewrites nothing beside it, so per-file clean-up
        would miss them)."""
        removed = 0
        for folder, _dirs, names in os.walk(record_dir(self.out)):
            for name in names:
                p = Path(folder) / name
                if name.startswith(".") and _TEMP.search(name) and p.is_file() and not p.is_symlink():
                    p.unlink(missing_ok=True)
                    removed += 1
        return removed

    def save(self) -> None:
        """Write the manifest, then clear what killed writes left in the record folder (``sweep_temps``)."""
        atomic_write_json(record_dir(self.out) / "manifest.json",
                          {"version": 1, "kind": KIND, "files": self.files, "conflicts": self.conflicts,
                           **({"environment": self.environment} if self.environment else {})})
        self.sweep_temps()

    def _copy(self, kind: str, rel: str) -> Path:
        return record_dir(self.out) / kind / rel

    def _read(self, kind: str, rel: str) -> bytes | None:
        try:
            return self._copy(kind, rel).read_bytes()
        except OSError:
            return None

    def _written(self, rel: str, new: bytes) -> None:
        """Remember ``new`` as what hipwizard last wrote to ``rel`` (the target is not touched)."""
        atomic_write_bytes(self._copy("base", rel), new)
        self.files[rel] = fingerprint(new)
        self._forget_conflict(rel)

    def _land(self, rel: str, target: Path, new: bytes, landing: bytes | None = None) -> None:
        """Write ``landing`` (default ``new``) to ``target`` and make ``new`` the base, in an order a kill at
        any point can be recovered from (``_recover``): ``next/`` holds the new base (and ``landing/`` the
        text going to the target when that differs) until the target is written, then replaces the base."""
        nxt, land = self._copy("next", rel), self._copy("landing", rel)
        atomic_write_bytes(nxt, new)
        if landing is not None:
            atomic_write_bytes(land, landing)
        atomic_write_bytes(target, new if landing is None else landing)
        self._promote(rel)

    def _promote(self, rel: str) -> None:
        base = self._copy("base", rel)
        base.parent.mkdir(parents=True, exist_ok=True)
        nxt = self._copy("next", rel)
        self.files[rel] = fingerprint(nxt.read_bytes())
        nxt.replace(base)
        fsync_dir(base.parent)
        self._copy("landing", rel).unlink(missing_ok=True)
        self._forget_conflict(rel)

    def _recover(self, rel: str, current: bytes | None) -> None:
        """Finish or drop a write of ``rel`` that was killed: if the target holds what it was writing, its
        new base takes over; else the old base stands."""
        nxt = self._read("next", rel)
        if nxt is None:
            return
        landing = self._read("landing", rel)
        if current is not None and current == (nxt if landing is None else landing):
            self._promote(rel)
        else:
            self._copy("next", rel).unlink(missing_ok=True)
            self._copy("landing", rel).unlink(missing_ok=True)

    def _forget_conflict(self, rel: str) -> None:
        if self.conflicts.pop(rel, None) is not None:
            for kind in ("new", "merged"):
                self._copy(kind, rel).unlink(missing_ok=True)

    # --- writing ----------------------------------------------------------------------------------------
    def place(self, rel: str, target: Path, new: bytes, *, force: bool = False) -> Placed:
        """Put the new result ``new`` of ``rel`` at ``target`` without losing the user's edits (module doc).
        Raises ``OSError`` when a file cannot be written."""
        remove_temps(target)
        try:
            current = target.read_bytes()
        except FileNotFoundError:
            current = None
        self._recover(rel, current)
        base = self._read("base", rel)  # what hipwizard last wrote there (None: never, or the copy is lost)
        ours = base is not None or rel in self.files
        unedited = current == base if base is not None else (
            current is not None and fingerprint(current) == self.files.get(rel))
        if current == new:  # already there (an unchanged write): at most the record to bring up to date
            if base != new:
                self._written(rel, new)
            else:
                self.files[rel] = fingerprint(new)
                self._forget_conflict(rel)
            return Placed("written")
        if current is None or (force and not ours) or unedited:
            self._land(rel, target, new)
            return Placed("written")
        if not ours:
            base = b""  # a file hipwizard never wrote: everything in it is the user's
        elif base == new:
            return Placed("kept", "your edits kept (nothing new to merge)")
        merged, count, why = self.merge(current, base or b"", new)
        if why:
            return self._conflict(rel, new, None, 0, why)
        if count == 0:
            self._land(rel, target, new, merged)
            return Placed("merged", "your edits merged with the new result")
        return self._conflict(rel, new, merged, count, "")

    def _conflict(self, rel: str, new: bytes, merged: bytes | None, count: int, why: str) -> Placed:
        atomic_write_bytes(self._copy("new", rel), new)
        if merged is not None:
            atomic_write_bytes(self._copy("merged", rel), merged)
        if not why:
            why = (f"{count} conflict(s) between your edits and the new result" if rel in self.files
                   or self._read("base", rel) is not None
                   else "a file hipwizard did not write differs from the new result")
        kept = self.conflicts.get(rel, {}).get("choices")
        self.conflicts[rel] = {"count": count, "why": why}
        if merged is not None and isinstance(kept, dict):  # a region met again keeps its decision
            keys = {h.key for h in conflict_hunks(rel, _text(merged), {})}
            if choices := {k: v for k, v in kept.items() if k in keys}:
                self.conflicts[rel]["choices"] = choices
        hint = "mine|new|merged" if merged is not None else "mine|new"
        return Placed("conflict", f"{why}; your file is kept as it is (resolve: "
                                  f"`hipwizard review {self.out} --resolve {rel}={hint}`)", count)

    def merge(self, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, int, str]:
        """``git merge-file`` of the three texts: (merged bytes, conflicts, "" ) or (b"", 0, why it could not)."""
        runner = self.runner or SubprocessRunner()
        with tempfile.TemporaryDirectory(prefix="hipwizard-merge-") as tmp:
            paths = [Path(tmp) / name for name in ("yours", "base", "new")]
            for p, data in zip(paths, (ours, base, theirs), strict=True):
                p.write_bytes(data)
            # Without -p git writes the result into the first file: bytes kept as they are (no decoding).
            # "--" and absolute paths: the three operands are never read as options
            result = runner.run(["git", "merge-file", "-L", "yours", "-L", "last written by hipwizard",
                                 "-L", "new result", "--", *(str(p.absolute()) for p in paths)],
                                timeout=MERGE_TIMEOUT_S)
            if result.status == "missing":
                return b"", 0, "you edited it and git is not installed to merge (apt install git)"
            code = result.returncode
            if result.status not in ("ok", "failed") or code is None or not 0 <= code < 128:
                return b"", 0, f"you edited it and the merge failed ({result.explain()})"
            return paths[0].read_bytes(), code, ""

    # --- conflicts --------------------------------------------------------------------------------------
    def resolve(self, rel: str, choice: str, target: Path) -> None:
        """Settle a conflict: keep ``mine`` (the user's file), take the ``new`` result, or write the ``merged``
        text with conflict markers. The new result becomes the base of the next merge. Raises ``UserError``."""
        if rel not in self.conflicts:
            listed = ", ".join(sorted(self.conflicts)) or "none"
            raise UserError(f"{rel} is not in conflict (conflicts: {listed})")
        if choice not in CHOICES:
            raise UserError(f"unknown choice {choice!r}: use mine, new or merged")
        new, merged = self._read("new", rel), self._read("merged", rel)
        if new is None or (choice == "merged" and merged is None):
            raise UserError(f"the {'merged text' if new is not None else 'new result'} of {rel} is missing "
                            f"under {record_dir(self.out)}; write again to make it")
        if choice == "mine":
            self._written(rel, new)
        else:
            self._land(rel, target, new, None if choice == "new" else merged)
        self.save()

    def output_hunks(self, *, edits: bool = True) -> list[OutputHunk]:
        """The conflict regions of every file in conflict (each with its stored choice), then (``edits``)
        the user's edits to the files hipwizard wrote (``worktree_hunks``)."""
        out: list[OutputHunk] = []
        for rel in sorted(self.conflicts):
            merged = self._read("merged", rel)
            if merged is not None:
                out += conflict_hunks(rel, _text(merged), self._choices(rel))
        for rel in (r for r in self.edited() if r not in self.conflicts) if edits else ():
            base, yours = self._read("base", rel), (self.out / rel).read_bytes()
            if base is not None:
                out += edit_hunks(rel, _text(base), _text(yours))
        return out

    def _choices(self, rel: str) -> dict[str, str]:
        choices = self.conflicts.get(rel, {}).get("choices")
        return dict(choices) if isinstance(choices, dict) else {}

    def choose(self, rel: str, index: int, choice: str, target: Path) -> bool:
        """Decide conflict region ``index`` (1-based) of ``rel``: ``mine`` or ``new``. Once every region of the
        file is decided the file is written from the choices (the new result becomes the base) and True is
        returned; until then the user's file is untouched. Raises ``UserError``."""
        if choice not in CONFLICT_CHOICES:
            raise UserError(f"unknown choice {choice!r} for one conflict: use mine or new")
        merged = self._read("merged", rel) if rel in self.conflicts else None
        regions = conflict_hunks(rel, _text(merged), {}) if merged is not None else []
        if merged is None or not regions:
            raise UserError(f"{rel} has no conflict regions to decide (conflicts: "
                            f"{', '.join(sorted(self.conflicts)) or 'none'}); settle the file with mine|new")
        if not 1 <= index <= len(regions):
            raise UserError(f"{rel} has {len(regions)} conflict(s); #{index} is not one of them")
        choices = {**self._choices(rel), regions[index - 1].key: choice}
        self.conflicts[rel]["choices"] = choices
        text = compose(_text(merged), choices)
        new = self._read("new", rel)
        if text is None or new is None:
            self.save()
            return False
        self._land(rel, target, new, text.encode("utf-8", "surrogateescape"))
        self.save()
        return True

    def edited(self) -> list[str]:
        """Files hipwizard wrote that the user has changed since (their hand edits)."""
        out = []
        for rel, sha in self.files.items():
            try:
                if fingerprint((self.out / rel).read_bytes()) not in (sha, fingerprint(self._read("base", rel) or b"")):
                    out.append(rel)
            except OSError:
                continue
        return sorted(out)


_TEMP = re.compile(r"\.[A-Za-z0-9_]{8}\.tmp$")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def remove_temps(target: Path) -> int:
    """Remove what a killed atomic write of ``target`` left beside it (``.<name>.XXXXXXXX.tmp``)."""
    removed = 0
    prefix = f".{target.name}."
    try:
        names = [p for p in target.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return 0
    for p in names:
        if _TEMP.fullmatch(p.name[len(prefix) - 1:]) and p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)
            removed += 1
    return removed


def is_foreign(out: Path) -> bool:
    """``out`` holds files although hipwizard never wrote there (a folder it did not create)."""
    try:
        return out.is_dir() and any(out.iterdir()) and not WorkTree(out).known
    except OSError:
        return False


def copy_file(tree: WorkTree, rel: str, source: Path, target: Path) -> Placed:
    """Copy a file the sources hold as it is (``--copy-untouched``) like any written file (``place``): the
    user's edits since hipwizard copied it are merged with the source's new bytes (a text conflict, a
    binary file both changed, or a file hipwizard never copied there is kept and listed as a conflict).
    Raises ``OSError``."""
    placed = tree.place(rel, target, source.read_bytes())
    if placed.status in ("written", "merged"):
        shutil.copymode(source, target)
    return placed
