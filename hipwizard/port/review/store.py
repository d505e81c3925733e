"""Where a review lives on disk: the state file, its journal, and how a change is committed.

``<out>.review.json`` (``file_format``) holds the whole review as of a revision; ``<out>.review.journal``
(``journal``) holds each change made since, one fsync'd line per op. ``commit`` applies an op to
the model and saves it before returning — a journal line, or the whole file every ``COMPACT_EVERY``
changes; if saving fails the model is put back as it was, so what a screen shows is what is on disk.
``read`` + ``replay`` give back the model with the journal applied. Temp files a killed save left beside
the state file are removed by the next save.

One writer at a time (``lock``): a session holds the review's lock while it runs (``hold``), or
opens read-only when another one does (``try_hold``: every change then raises ``ReviewBusy``); a change
made without a session's hold takes the lock for that one write. Under the lock, the state file and the
journal must be as this store last read or wrote them (``_disk_mark``): a review changed behind its back
(a process that took no lock) refuses the change instead of appending a revision that collides.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.port.model import Diagnostic, Hunk, UntouchedRisk
from hipwizard.port.output.worktree import remove_temps
from hipwizard.port.review import file_format as review_format
from hipwizard.port.review import journal as review_journal
from hipwizard.port.review.file_format import Decision
from hipwizard.port.review.lock import ReviewBusy, ReviewLock
from hipwizard.port.review.model import WriteRecord


class ReviewStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.writer = review_format.Writer()
        self.journal_entries = 0  # changes in the journal, not yet in the state file
        self.on_disk: Path | None = None  # the state file this journal belongs to (written or read)
        # Lines of the journal that could not be read (1-based), and where that journal was kept aside.
        self.journal_unreadable: list[int] = []
        self.journal_kept: Path | None = None
        self.lock = ReviewLock(self.path)
        self.read_only: ReviewBusy | None = None  # another session held the lock when this one opened
        self.mark: tuple | None = None  # the state file and journal as last read or written (None: not read)

    @property
    def journal(self) -> Path:
        return review_journal.journal_path(self.path)

    # --- one writer ------------------------------------------------------------------------------------
    def hold(self) -> None:
        """Hold the review's lock for this session (before reading it). Raises ``ReviewBusy`` when another
        session holds it; a folder where no lock file can be made is left unlocked (nothing can be saved
        there either)."""
        try:
            if not self.lock.acquire():
                raise self.lock.busy()
        except OSError:
            pass

    def try_hold(self) -> bool:
        """``hold``, or else open read-only (``read_only`` says who holds it). True when writable."""
        try:
            self.hold()
        except ReviewBusy as busy:
            self.read_only = busy
        return self.read_only is None

    def release(self) -> None:
        """Give the session's lock back (the process's other holds keep it)."""
        self.lock.release()

    def _disk_mark(self) -> tuple:
        def mark(p: Path):
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError:
                return None
            return st.st_ino, st.st_size, st.st_mtime_ns
        return mark(self.path), mark(self.journal)

    @contextmanager
    def _writing(self):
        """Around every write: the lock held (the session's, or taken for this write), the files on disk
        as this store left them; afterwards, their new mark."""
        if self.read_only is not None:
            raise self.read_only
        if self.lock.state_path != self.path and not self.lock.held:
            self.lock, self.mark = ReviewLock(self.path), None  # the review moved to another state file
        took = False
        if not self.lock.held:
            if not self.lock.acquire():
                raise self.lock.busy()
            took = True
        try:
            if self.mark is not None and self._disk_mark() != self.mark:
                raise UserError(f"the review {self.path} was changed by another session since this one read it; "
                                "this change was not saved: reopen the review")
            yield
            self.mark = self._disk_mark()
        finally:
            if took:
                self.lock.release_one()

    # --- reading ----------------------------------------------------------------------------------------
    def read(self) -> dict:
        """The state file's fields as keyword arguments of ``ReviewModel``. A damaged or newer file raises
        ``UserError`` and is left as it is."""
        p = self.path
        data = review_format.read(p)
        try:
            fields = dict(
                src=review_format.resolve_from_state(p, data["src"]),
                out=review_format.resolve_from_state(p, data["out"]), backend=data.get("backend", ""),
                files=data.get("files", {}), hunks=[Hunk.from_dict(h) for h in data.get("hunks", [])],
                decisions={k: Decision.from_dict(v) for k, v in data.get("decisions", {}).items()},
                splits=data.get("splits", {}), history=data.get("history", []),
                revision=int(data.get("revision", 0)), last_write=WriteRecord.from_dict(data.get("last_write")),
                untouched={f: tuple(UntouchedRisk.from_dict(r) for r in risks)
                           for f, risks in data.get("untouched", {}).items()},
                diagnostics={f: tuple(Diagnostic.from_dict(d) for d in diags)
                             for f, diags in (data.get("diagnostics") or {}).items()},
                hip_version=str(data.get("hip_version") or ""),
                vanished=review_format.check_vanished(data.get("vanished", [])),
                needs_untouched=data["version"] < 2,
                environment=data["environment"] if isinstance(data.get("environment"), dict) else None,
            )
            review_format.check_paths(fields["files"], fields["hunks"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UserError(f"review state {p} is damaged ({why}); it was kept as it is") from None
        self.on_disk = p
        return fields

    def replay(self, model) -> None:
        """Apply the journal's changes made after the model's revision. A journal that does not fit raises
        ``UserError`` (kept as it is)."""
        entries, self.journal_unreadable = review_journal.read_all(self.journal)
        try:
            for entry in entries:
                if entry["rev"] <= model.revision:
                    continue  # already in the state file (compacted before the journal was removed)
                if entry["rev"] != model.revision + 1:
                    lost = (f"; {review_journal.describe(self.journal_unreadable, self.journal)}"
                            if self.journal_unreadable else "")
                    raise ValueError(f"revision {entry['rev']} follows {model.revision}{lost}")
                model.apply({k: v for k, v in entry.items() if k != "rev"})
                self.journal_entries += 1
            self.mark = self._disk_mark()
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise UserError(f"review journal {self.journal} is damaged ({exc}); it was kept as it is") from None

    # --- writing ----------------------------------------------------------------------------------------
    def to_json(self, model) -> str:
        return self.writer.to_json(model, self.path)

    def save(self, model) -> None:
        """Write the whole model atomically (the journal's changes included, so the journal goes). Raises
        ``OSError`` when the folder is not writable, ``UserError`` (``ReviewBusy``) when another session
        writes the review."""
        with self._writing():
            remove_temps(self.path)  # what a killed save left beside the state file
            atomic_write_text(self.path, self.to_json(model))
            if self.journal_unreadable and self.journal_kept is None and self.journal.exists():
                self.journal_kept = review_journal.keep_aside(self.journal, model.revision)
            review_journal.remove(self.journal)
            self.journal_entries = 0
            self.on_disk = self.path

    def compact(self, model) -> None:
        """Fold the journal into the state file, if there is one (on open and exit); a read-only session
        leaves it to the writer."""
        if self.read_only is None and (self.journal_entries or self.journal.exists()):
            self.save(model)

    def commit(self, model, op: dict):
        """``model.apply(op)``, saved before returning; on any failure the model is put back. Returns what
        ``apply`` returns."""
        snap = model.snapshot()
        try:
            with self._writing():  # the revision is taken under the lock, on the files as last seen
                result = model.apply(op)
                if self.on_disk != self.path or self.journal_entries + 1 >= review_journal.COMPACT_EVERY:
                    self.save(model)
                else:
                    review_journal.append(self.journal, {"rev": model.revision, **op})
                    self.journal_entries += 1
        except BaseException:
            model.restore(snap)
            raise
        return result

    def describe_unreadable(self) -> str:
        """One line about the journal lines that could not be read on load ("" when all were read)."""
        if not self.journal_unreadable:
            return ""
        kept = f"; the journal was kept as {self.journal_kept.name}" if self.journal_kept else ""
        return review_journal.describe(self.journal_unreadable, self.journal) + kept
