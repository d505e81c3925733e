"""The review state: what the user decided about each hunk of a migration, saved after every change.

The state lives in one JSON file beside the output directory (``<out>.review.json`` next to ``<out>``):
readable, with a ``version`` field, one hunk and one decision per line so a team can commit it and review
in turns. Every change (decision, edit, split, undo) is appended at once, fsync'd, to a journal beside it
(``review_journal``), so ``kill -9`` loses at most the keystroke in flight; the state file itself is
rewritten atomically (temp file, fsync, rename) from memory on ``save``/``compact`` (open, exit, every few
hundred changes) and always reads back with the journal applied.

Risks on lines the translation left unchanged (``untouched``: file -> ``UntouchedRisk`` list) are kept
per file, files without hunks included: nothing to decide about them, but a manual edit to make.
Version 1 files (before ``untouched``) still load; ``needs_untouched`` tells the caller to fill them in
from a fresh translation (``migration.refresh`` does).

Decisions per hunk id: ``pending`` (keep the original), ``accepted`` (take the translation), ``rejected``
(keep the original, on purpose), ``edited`` (take the user's edited translation). Source fingerprints
(sha256 of each original file) tell when the sources changed; ``reconcile`` then keeps the decisions of
hunks whose text still matches and brings the others back pending, marked ``changed``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.port import review_journal
from hipwizard.port.model import SEVERITY_ORDER, FileTranslation, Hunk, UntouchedRisk
from hipwizard.port.scan import encode_source
from hipwizard.port.split import split_hunk

REVIEW_VERSION = 2  # 2 added "untouched"; version 1 files load without it
KIND = "hipwizard-review"
HISTORY_LIMIT = 500
DecisionState = Literal["pending", "accepted", "rejected", "edited"]
DECIDED = ("accepted", "rejected", "edited")


def state_path_for(out_dir: str | Path) -> Path:
    """Where the review state of output directory ``out_dir`` lives: ``<out>.review.json`` beside it."""
    out = Path(out_dir).expanduser().resolve()
    return out.parent / f"{out.name}.review.json"


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Decision:
    state: DecisionState = "pending"
    lines: list[str] | None = None  # the edited translated side, for ``edited``
    changed: bool = False  # came back pending because the sources changed

    def to_dict(self) -> dict:
        d: dict = {"state": self.state}
        if self.lines is not None:
            d["lines"] = self.lines
        if self.changed:
            d["changed"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Decision":
        state = d.get("state", "pending")
        if state not in ("pending",) + DECIDED:
            raise ValueError(f"unknown decision {state!r}")
        return cls(state, d.get("lines"), bool(d.get("changed", False)))


@dataclass
class ReconcileReport:
    kept: int = 0
    changed: int = 0
    dropped: int = 0
    changed_files: list[str] = field(default_factory=list)


class ReviewState:
    """Hunks of a migration in file order, a decision per hunk id, splits, and an undo history."""

    def __init__(self, path: Path, src: Path, out: Path, *, backend: str = "", files: dict | None = None,
                 hunks: Iterable[Hunk] = (), decisions: dict[str, Decision] | None = None,
                 splits: dict | None = None, history: list | None = None, revision: int = 0,
                 last_write: dict | None = None,
                 untouched: dict[str, tuple[UntouchedRisk, ...]] | None = None) -> None:
        self.path = Path(path)
        self.src = Path(src)
        self.out = Path(out)
        self.backend = backend
        self.files: dict[str, dict] = files or {}
        self.decisions: dict[str, Decision] = decisions or {}
        self.splits: dict[str, dict] = splits or {}  # parent id -> {"hunk": parent dict, "children": [ids]}
        self.history: list[list[dict]] = history or []
        self.revision = revision
        self.last_write = last_write
        self.untouched: dict[str, tuple[UntouchedRisk, ...]] = untouched or {}
        self.needs_untouched = False  # loaded from a version 1 file: untouched risks not computed yet
        self._line_cache: dict[str, str] = {}  # hunk id -> its serialized JSON line (hunks rarely change)
        self._decision_cache: dict[str, tuple[Decision, str]] = {}
        self._hunks_block: tuple[list | None, str] = (None, "")
        self._counts: tuple[int, list | None, dict] = (-1, None, {})
        self._journal_entries = 0  # changes in the journal, not yet in the state file
        self._on_disk: Path | None = None  # the state file this journal belongs to (written or read)
        self._set_hunks(list(hunks))

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    def create(cls, src: str | Path, out: str | Path, translations: Iterable[FileTranslation], *,
               path: str | Path | None = None) -> "ReviewState":
        """A fresh review of ``translations`` (every hunk pending). Not saved until ``save()``."""
        src_p, out_p = Path(src).expanduser().resolve(), Path(out).expanduser().resolve()
        state = cls(Path(path) if path else state_path_for(out_p), src_p, out_p)
        state._adopt(list(translations))
        for h in state.hunks:
            state.decisions.setdefault(h.hunk_id, Decision())
        return state

    @classmethod
    def load(cls, path: str | Path) -> "ReviewState":
        """Read a state file. A damaged or newer file raises ``UserError`` and is left as it is."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"no review state at {p} (run `hipwizard hipify SRC --out DIR` first)") from None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"review state {p} is unreadable ({exc}); it was kept as it is") from None
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise UserError(f"{p} is not a hipwizard review state; it was kept as it is")
        version = data.get("version")
        if not isinstance(version, int) or version > REVIEW_VERSION:
            raise UserError(f"review state {p} has version {version!r}, newer than this hipwizard understands "
                            f"({REVIEW_VERSION}); upgrade hipwizard — the file was kept as it is")
        try:
            state = cls(
                p, Path(data["src"]), Path(data["out"]), backend=data.get("backend", ""),
                files=data.get("files", {}), hunks=[Hunk.from_dict(h) for h in data.get("hunks", [])],
                decisions={k: Decision.from_dict(v) for k, v in data.get("decisions", {}).items()},
                splits=data.get("splits", {}), history=data.get("history", []),
                revision=int(data.get("revision", 0)), last_write=data.get("last_write"),
                untouched={f: tuple(UntouchedRisk.from_dict(r) for r in risks)
                           for f, risks in data.get("untouched", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"review state {p} is damaged ({exc!r}); it was kept as it is") from None
        state._on_disk = p
        state.needs_untouched = version < 2
        try:
            state._replay()
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise UserError(f"review journal {state.journal} is damaged ({exc!r}); it was kept as it is") from None
        return state

    @property
    def journal(self) -> Path:
        return review_journal.journal_path(self.path)

    def _replay(self) -> None:
        """Apply the journal's changes made after the state file's revision (see ``review_journal``)."""
        for entry in review_journal.read(self.journal):
            if entry["rev"] <= self.revision:
                continue  # already in the state file (compacted before the journal was removed)
            if entry["rev"] != self.revision + 1:
                raise ValueError(f"revision {entry['rev']} follows {self.revision}")
            self._apply(entry)
            del self.history[:-HISTORY_LIMIT]
            self.revision = entry["rev"]
            self._journal_entries += 1

    def _set_hunks(self, hunks: list[Hunk]) -> None:
        self.hunks = hunks
        self.index_of = {h.hunk_id: i for i, h in enumerate(hunks)}
        self.by_file: dict[str, list[int]] = {}
        for i, h in enumerate(hunks):
            self.by_file.setdefault(h.file, []).append(i)

    def _adopt(self, translations: list[FileTranslation]) -> None:
        """Take the files and hunks of a translation (fingerprints from the original text)."""
        self.files = {}
        hunks: list[Hunk] = []
        for t in translations:
            self.backend = self.backend or t.backend
            raw = encode_source(t.original)
            self.files[t.path] = {"sha256": fingerprint(raw), "hunks": len(t.hunks)}
            hunks.extend(sorted(t.hunks, key=lambda h: h.old_start))
        self.set_untouched(translations)
        self._set_hunks(hunks)

    def set_untouched(self, translations: Iterable[FileTranslation]) -> None:
        """Take the untouched-line risks of ``translations`` (files of this review only). Not saved."""
        self.untouched = {t.path: risks for t in translations if t.path in self.files
                          for risks in [UntouchedRisk.of(t)] if risks}
        self.needs_untouched = False

    # --- saving ---------------------------------------------------------------------------------------
    def save(self) -> None:
        """Write the whole state atomically (the journal's changes included, so the journal goes).
        Raises ``OSError`` when the folder is not writable."""
        atomic_write_text(self.path, self.to_json())
        review_journal.remove(self.journal)
        self._journal_entries = 0
        self._on_disk = self.path

    def compact(self) -> None:
        """Fold the journal into the state file, if there is one (on open and exit)."""
        if self._journal_entries or self.journal.exists():
            self.save()

    def to_json(self) -> str:
        head = {"version": REVIEW_VERSION, "kind": KIND, "src": str(self.src), "out": str(self.out),
                "backend": self.backend, "revision": self.revision, "last_write": self.last_write}
        parts = ["{\n"]
        parts += [f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items()]
        parts.append(_block("files", [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in self.files.items()], "{}"))
        parts.append(_block("untouched", [f"{json.dumps(k)}: {json.dumps([r.to_dict() for r in v])}"
                                          for k, v in self.untouched.items()], "{}"))
        parts.append(_block("decisions", [self._decision_line(h.hunk_id) for h in self.hunks], "{}"))
        if self._hunks_block[0] is not self.hunks:  # the hunk list is replaced (never mutated) on change
            self._hunks_block = (self.hunks, _block("hunks", [self._hunk_line(h) for h in self.hunks], "[]"))
        parts.append(self._hunks_block[1])
        parts.append(_block("splits", [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in self.splits.items()], "{}"))
        parts.append(_block("history", [json.dumps(e) for e in self.history], "[]", last=True))
        parts.append("}\n")
        return "".join(parts)

    def _decision_line(self, hunk_id: str) -> str:
        # Decisions are replaced, never mutated: a cached line is valid while its object is the same.
        d = self.decision(hunk_id)
        cached = self._decision_cache.get(hunk_id)
        if cached is None or cached[0] is not d:
            cached = self._decision_cache[hunk_id] = (d, f"{json.dumps(hunk_id)}: {json.dumps(d.to_dict())}")
        return cached[1]

    def _hunk_line(self, h: Hunk) -> str:
        line = self._line_cache.get(h.hunk_id)
        if line is None:
            line = json.dumps(h.to_dict(), ensure_ascii=False)
            if not line.isascii():
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:  # undecodable source bytes (surrogate escapes): keep them as \u escapes
                    line = json.dumps(h.to_dict())
            self._line_cache[h.hunk_id] = line
        return line

    # --- reading decisions ---------------------------------------------------------------------------
    def decision(self, hunk_id: str) -> Decision:
        return self.decisions.get(hunk_id) or Decision()

    def hunk(self, hunk_id: str) -> Hunk:
        return self.hunks[self.index_of[hunk_id]]

    def chosen_lines(self, hunk: Hunk) -> list[str]:
        """The lines this hunk contributes to the output: translation, edit, or original."""
        d = self.decision(hunk.hunk_id)
        if d.state == "accepted":
            return hunk.new_lines
        if d.state == "edited" and d.lines is not None:
            return d.lines
        return hunk.old_lines

    def written_line(self, rel: str, risk: UntouchedRisk) -> int | None:
        """Where an unchanged line with a risk lands in the file written from the current decisions."""
        if risk.old_line is None:
            return None
        shift = 0
        for i in self.by_file.get(rel, ()):
            h = self.hunks[i]
            if h.old_start + len(h.old_lines) <= risk.old_line:
                shift += len(self.chosen_lines(h)) - len(h.old_lines)
        return risk.old_line + shift

    def counts(self, hunk_indices: Iterable[int] | None = None) -> dict[str, int]:
        """pending / accepted / rejected / edited / high_pending / changed, over all hunks or some."""
        if hunk_indices is None:
            # The screen asks after every keystroke: cache per revision (every change bumps it).
            rev, hunks, cached = self._counts
            if rev == self.revision and hunks is self.hunks:
                return dict(cached)
            result = self._count(range(len(self.hunks)))
            self._counts = (self.revision, self.hunks, result)
            return dict(result)
        return self._count(hunk_indices)

    def _count(self, indices: Iterable[int]) -> dict[str, int]:
        c = dict.fromkeys(("pending", "accepted", "rejected", "edited", "high_pending", "changed", "total"), 0)
        for i in indices:
            h = self.hunks[i]
            d = self.decision(h.hunk_id)
            c[d.state] += 1
            c["total"] += 1
            c["changed"] += d.changed
            if d.state == "pending" and h.max_severity == "high":
                c["high_pending"] += 1
        return c

    def first_pending(self) -> int | None:
        for i, h in enumerate(self.hunks):
            if self.decision(h.hunk_id).state == "pending":
                return i
        return None

    # --- changing decisions (each saved at once, each undoable) -----------------------------------------
    def _commit(self, op: dict):
        """Apply ``op`` (a journal entry without its revision), then save it: a journal line, or the whole
        file every ``COMPACT_EVERY`` changes. If saving fails (``OSError``), memory is put back as it was,
        so what the screen shows is always what is on disk. Returns what ``_apply`` returns."""
        snapshot = (self.hunks, dict(self.decisions), dict(self.splits), list(self.history), self.revision)
        counted = self._counts
        try:
            result = self._apply(op)
            del self.history[:-HISTORY_LIMIT]
            self.revision += 1
            if op["op"] in ("decide", "edit") and counted[0] == self.revision - 1 and counted[1] is self.hunks:
                self._counts = (self.revision, self.hunks, self._recount(counted[2], self.history[-1]))
            if self._on_disk != self.path or self._journal_entries + 1 >= review_journal.COMPACT_EVERY:
                self.save()
            else:
                review_journal.append(self.journal, {"rev": self.revision, **op})
                self._journal_entries += 1
        except BaseException:
            hunks, self.decisions, self.splits, self.history, self.revision = snapshot
            self._set_hunks(hunks)
            self._counts = (-1, None, {})
            raise
        return result

    def _recount(self, counts: dict, entry: list[dict]) -> dict:
        """``counts`` after the decisions of history ``entry`` (one per hunk, with its state before): a
        keystroke costs O(hunks decided), not O(all hunks)."""
        c = dict(counts)
        for step in entry:
            h = self.hunk(step["id"])
            high = h.max_severity == "high"
            for d, sign in ((Decision.from_dict(step["before"]), -1), (self.decision(step["id"]), 1)):
                c[d.state] += sign
                c["changed"] += sign * d.changed
                if d.state == "pending" and high:
                    c["high_pending"] += sign
        return c

    def _apply(self, op: dict):
        """Make one change in memory (also used to replay the journal, so it must be deterministic)."""
        kind = op["op"]
        if kind in ("decide", "edit"):
            ids = op["ids"] if kind == "decide" else [op["id"]]
            entry = [{"op": "decide", "id": hid, "before": self.decision(hid).to_dict()} for hid in ids]
            for hid in ids:
                self.decisions[hid] = Decision(op["state"]) if kind == "decide" else Decision("edited", list(op["lines"]))
            self.history.append(entry)
            return ids
        if kind == "split":
            hunk_id = op["id"]
            parent = self.hunk(hunk_id)
            children = split_hunk(parent)
            before = self.decision(hunk_id)
            start = "pending" if before.state == "edited" else before.state
            i = self.index_of[hunk_id]
            self._set_hunks(self.hunks[:i] + children + self.hunks[i + 1:])
            self.splits[hunk_id] = {"hunk": parent.to_dict(), "children": [c.hunk_id for c in children]}
            self.decisions.pop(hunk_id, None)
            for c in children:
                self.decisions[c.hunk_id] = Decision(start)
            self.history.append([{"op": "split", "id": hunk_id, "before": before.to_dict()}])
            return children
        if kind == "undo":
            touched = []
            entry = self.history.pop()
            for step in reversed(entry):
                hid = step["id"]
                if step["op"] == "split":
                    self._unsplit(hid)
                self.decisions[hid] = Decision.from_dict(step["before"])
                touched.append(hid)
            return touched
        raise ValueError(f"unknown change {kind!r}")

    def decide(self, hunk_ids: Iterable[str], state: DecisionState, *, only_pending: bool = False) -> list[str]:
        """Set ``state`` on the hunks; returns the ids that changed. One undo step for the whole batch."""
        ids = []
        for hid in hunk_ids:
            old = self.decision(hid)
            if (only_pending and old.state != "pending") or (old.state == state and not old.changed):
                continue
            ids.append(hid)
        if not ids:
            return []
        return self._commit({"op": "decide", "ids": ids, "state": state})

    def edit(self, hunk_id: str, lines: list[str]) -> None:
        """Keep the user's own translated side for this hunk (it is applied like an accepted hunk)."""
        self._commit({"op": "edit", "id": hunk_id, "lines": list(lines)})

    def split(self, hunk_id: str) -> list[Hunk]:
        """Split a hunk in place; returns its children (``[]`` when it cannot be split). Children start
        with the parent's decision (an edited parent's children start pending: the edit no longer fits)."""
        if len(split_hunk(self.hunk(hunk_id))) <= 1:
            return []
        return self._commit({"op": "split", "id": hunk_id})

    def undo(self) -> list[str] | None:
        """Undo the last change; returns the hunk ids it touched, or None when there is nothing to undo."""
        if not self.history:
            return None
        return self._commit({"op": "undo"})

    def _unsplit(self, parent_id: str) -> None:
        info = self.splits.pop(parent_id)
        for c in info["children"]:
            if c in self.splits:  # a child split again: undo that first
                self._unsplit(c)
        children = set(info["children"])
        first = min(self.index_of[c] for c in children)
        kept = [h for h in self.hunks if h.hunk_id not in children]
        kept.insert(first, Hunk.from_dict(info["hunk"]))
        for c in children:
            self.decisions.pop(c, None)
        self._set_hunks(kept)

    def record_write(self, files: int, compile_errors: int) -> None:
        """Remember that the decisions of this revision were written (the step is done when nothing pends)."""
        previous = self.last_write
        self.last_write = {"revision": self.revision, "files": files, "compile_errors": compile_errors}
        try:
            self.save()
        except OSError:
            self.last_write = previous
            raise

    # --- sources changed ------------------------------------------------------------------------------
    def changed_sources(self) -> list[str]:
        """Files of the review whose source bytes differ from the fingerprint (or vanished)."""
        out = []
        for rel, info in self.files.items():
            try:
                raw = (self.src / rel).read_bytes()
            except OSError:
                out.append(rel)
                continue
            if fingerprint(raw) != info.get("sha256"):
                out.append(rel)
        return out

    def reconcile(self, translations: Iterable[FileTranslation]) -> ReconcileReport:
        """Adopt a fresh translation of the sources, keeping what still matches.

        A hunk whose id (its file, context and text) is known keeps its decision, and a known split is
        made again; any other hunk comes back pending, marked ``changed``. The undo history is cleared
        (it refers to hunks that may be gone). Saves.
        """
        old_decisions, old_splits = self.decisions, self.splits
        old_ids = set(self.index_of)
        old_files = dict(self.files)
        self._adopt(list(translations))
        report = ReconcileReport()
        report.changed_files = sorted(
            f for f, info in self.files.items() if old_files.get(f, {}).get("sha256") != info["sha256"]
        )
        self.decisions, self.splits, self.history = {}, {}, []
        hunks: list[Hunk] = []
        for h in self.hunks:
            if h.hunk_id in old_splits:
                children = split_hunk(h)
                self.splits[h.hunk_id] = {"hunk": h.to_dict(), "children": [c.hunk_id for c in children]}
                hunks.extend(children)
            else:
                hunks.append(h)
        for h in hunks:
            if h.hunk_id in old_decisions:
                self.decisions[h.hunk_id] = old_decisions[h.hunk_id]
                report.kept += 1
            else:
                self.decisions[h.hunk_id] = Decision(changed=True)
                report.changed += 1
        report.dropped = len(old_ids - {h.hunk_id for h in hunks})
        self._line_cache.clear()
        self._set_hunks(hunks)
        self.revision += 1
        self.save()
        return report

    # --- queries for the screen and the CLI ---------------------------------------------------------------
    def rule_ids(self) -> list[str]:
        """Rule ids present in the hunks and on untouched lines (cached per hunk list and untouched map:
        the screen asks on every redraw)."""
        cached = getattr(self, "_rules", (None, None, []))
        if cached[0] is not self.hunks or cached[1] is not self.untouched:
            rules = {f.rule_id for h in self.hunks for f in h.flags}
            rules |= {r.flag.rule_id for risks in self.untouched.values() for r in risks}
            cached = self._rules = (self.hunks, self.untouched, sorted(rules))
        return list(cached[2])

    def untouched_counts(self) -> dict[str, int]:
        """Risks on unchanged lines by severity, plus ``total``."""
        c = dict.fromkeys(SEVERITY_ORDER, 0)
        for risks in self.untouched.values():
            for r in risks:
                c[r.flag.severity] += 1
        return {**c, "total": sum(c.values())}

    def summary(self) -> dict:
        c = self.counts()
        sev = dict.fromkeys(SEVERITY_ORDER, 0)
        for h in self.hunks:
            if h.max_severity:
                sev[h.max_severity] += 1
        return {"files": len(self.files), "hunks": c["total"],
                "decided": c["accepted"] + c["rejected"] + c["edited"], **c,
                "flagged": sev, "untouched": self.untouched_counts(), "revision": self.revision, "last_write": self.last_write,
                "state_file": str(self.path), "src": str(self.src), "out": str(self.out)}


def _block(name: str, rows: list[str], empty: str, *, last: bool = False) -> str:
    tail = "" if last else ","
    if not rows:
        return f"  {json.dumps(name)}: {empty}{tail}\n"
    open_, close = empty[0], empty[1]
    return f"  {json.dumps(name)}: {open_}\n    " + ",\n    ".join(rows) + f"\n  {close}{tail}\n"
