"""The review of a migration as the CLI and the screens use it: a ``ReviewModel`` saved by a ``ReviewStore``.

The state lives in one JSON file beside the output directory (``<out>.review.json`` next to ``<out>``,
``review_format``): readable, with a ``version`` field, one hunk and one decision per line so a team can
commit it and review in turns. Every change (decision, edit, split, undo) is an op applied to the model
(``ReviewModel.apply``, no I/O) and appended at once, fsync'd, to a journal beside it (``review_store``,
``review_journal``), so ``kill -9`` loses at most the keystroke in flight; the state file itself is
rewritten atomically from memory on ``save``/``compact`` (open, exit, every few hundred changes) and
always reads back with the journal applied. Derived numbers are remembered per revision (``review_memo``).

Risks on lines the translation left unchanged (``untouched``) are kept per file; version 1 files (before
``untouched``) still load and ``needs_untouched`` tells the caller to fill them in from a fresh translation
(``services.refresh`` does). Source fingerprints (sha256 of each original file) tell when the sources
changed; ``reconcile`` then keeps the decisions of hunks whose text still matches and brings the others
back pending, marked ``changed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hipwizard.port.model import FileTranslation, Hunk
from hipwizard.port.review.file_format import (
    DECIDED,
    REVIEW_VERSION,
    Decision,
    DecisionState,
    fingerprint,
    state_path_for,
)
from hipwizard.port.review.model import HISTORY_LIMIT, ReviewModel, WriteRecord
from hipwizard.port.review.reconcile import ReconcileReport
from hipwizard.port.review.split import split_hunk
from hipwizard.port.review.store import ReviewStore

__all__ = ["DECIDED", "HISTORY_LIMIT", "REVIEW_VERSION", "Decision", "DecisionState", "ReconcileReport",
           "ReviewState", "fingerprint", "state_path_for"]


class ReviewState(ReviewModel):
    """A review model bound to its state file: every change is saved before the call returns."""

    def __init__(self, path: Path, src: Path, out: Path, *, store: ReviewStore | None = None, **fields) -> None:
        super().__init__(src, out, **fields)
        self.store = store or ReviewStore(Path(path))

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    def create(cls, src: str | Path, out: str | Path, translations: Iterable[FileTranslation], *,
               path: str | Path | None = None, hip_version: str | None = None) -> ReviewState:
        """A fresh review of ``translations`` (every hunk pending), whose APIs were checked against HIP
        ``hip_version`` (None: not known). Not saved until ``save()``."""
        src_p, out_p = Path(src).expanduser().resolve(), Path(out).expanduser().resolve()
        state = cls(Path(path) if path else state_path_for(out_p), src_p, out_p, hip_version=hip_version or "")
        state.adopt(list(translations))
        for h in state.hunks:
            state.decisions.setdefault(h.hunk_id, Decision())
        return state

    @classmethod
    def load(cls, path: str | Path, *, lock: str = "none") -> ReviewState:
        """Read a state file and apply its journal. A damaged or newer file raises ``UserError`` and is
        left as it is. ``lock`` (``review_lock``): "hold" the review for this session first (``ReviewBusy``
        when another holds it), "try" it (else the review opens ``read_only``), or "none"."""
        store = ReviewStore(Path(path))
        if lock != "none":
            store.hold() if lock == "hold" else store.try_hold()
        try:
            state = cls(store.path, store=store, **store.read())
            store.replay(state)
        except BaseException:
            store.release()
            raise
        return state

    # --- the store ----------------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.store.path

    @path.setter
    def path(self, value: Path) -> None:
        """Move the review to another state file (its next change writes the whole file there)."""
        self.store.path = Path(value)

    @property
    def journal(self) -> Path:
        return self.store.journal

    @property
    def read_only(self):
        """``ReviewBusy`` (a ``UserError`` naming the other session) when another session writes this
        review, else None."""
        return self.store.read_only

    def release(self) -> None:
        """Give back this session's hold on the review's lock."""
        self.store.release()

    @property
    def journal_unreadable(self) -> list[int]:
        return self.store.journal_unreadable

    @property
    def journal_kept(self) -> Path | None:
        return self.store.journal_kept

    def journal_warning(self) -> str:
        """One line about the journal lines that could not be read on load ("" when all were read)."""
        return self.store.describe_unreadable()

    def summary(self) -> dict:
        return {**super().summary(), "state_file": str(self.path),
                "journal_unreadable": {"count": len(self.journal_unreadable), "lines": list(self.journal_unreadable),
                                       "warning": self.journal_warning()}}

    def save(self) -> None:
        """Write the whole state atomically (the journal's changes included, so the journal goes).
        Raises ``OSError`` when the folder is not writable."""
        self.store.save(self)

    def compact(self) -> None:
        """Fold the journal into the state file, if there is one (on open and exit)."""
        self.store.compact(self)

    def to_json(self) -> str:
        return self.store.to_json(self)

    # --- changing decisions (each saved at once, each undoable) -----------------------------------------
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
        return self.store.commit(self, {"op": "decide", "ids": ids, "state": state})

    def edit(self, hunk_id: str, lines: list[str]) -> None:
        """Keep the user's own translated side for this hunk (it is applied like an accepted hunk)."""
        self.store.commit(self, {"op": "edit", "id": hunk_id, "lines": list(lines)})

    def split(self, hunk_id: str) -> list[Hunk]:
        """Split a hunk in place; returns its children (``[]`` when it cannot be split). Children start
        with the parent's decision (an edited parent's children start pending: the edit no longer fits)."""
        if len(split_hunk(self.hunk(hunk_id))) <= 1:
            return []
        return self.store.commit(self, {"op": "split", "id": hunk_id})

    def undo(self) -> list[str] | None:
        """Undo the last change; returns the hunk ids it touched, or None when there is nothing to undo."""
        if not self.history:
            return None
        return self.store.commit(self, {"op": "undo"})

    def record_write(self, files: int, compile_errors: int, *, arch: str = "", check_note: str = "") -> None:
        """Remember that the decisions of this revision were written (the step is done when nothing pends),
        with the arch the compile check really used and its note."""
        previous = self.last_write
        self.last_write = WriteRecord(self.revision, files, compile_errors, arch, check_note)
        try:
            self.save()
        except OSError:
            self.last_write = previous
            raise

    def reconcile(self, translations: Iterable[FileTranslation], hip_version: str | None = None) -> ReconcileReport:
        """``ReviewModel.reconcile``, then saved (the hunk list changed: the file writer forgets its lines)."""
        report = super().reconcile(translations, hip_version)
        self.store.writer.forget_hunks()
        self.save()
        return report
