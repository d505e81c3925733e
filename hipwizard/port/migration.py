"""Finding, starting and refreshing a migration's review (shared by ``hipwizard review`` and the screen).

A migration is a source tree, an output folder and the review state beside the output. ``locate`` finds the
state from what a user types (a workspace, an output folder, or the state file itself); ``start`` translates
a tree with the engine and writes a fresh review; ``refresh`` re-translates when sources changed and
reconciles the decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from hipwizard.errors import UserError
from hipwizard.port.review_state import ReconcileReport, ReviewState, state_path_for
from hipwizard.workspace import STATE_DIRNAME, Workspace

Progress = Callable[..., None]  # (done, total[, current path]): the engine's backends call it with two


def locate(target: str | Path) -> Path:
    """The review state file for ``target``: a workspace folder (its port step's output), an output
    folder (``<out>.review.json`` beside it) or a ``*.review.json`` file. Raises ``UserError``."""
    p = Path(target).expanduser()
    if p.is_file() and p.name.endswith(".review.json"):
        return p.resolve()
    if (p / STATE_DIRNAME).is_dir():
        from hipwizard.port.state import review_path

        found = review_path(Workspace(p))
        if found is not None and found.exists():
            return found
    beside = state_path_for(p)
    if beside.exists():
        return beside
    if not p.exists():
        raise UserError(f"{p} does not exist")
    raise UserError(f"no review found for {p}: expected {beside.name} beside it "
                    f"(run `hipwizard hipify SRC --out {p}` first)")


def workspace_for(state_path: Path, review: ReviewState) -> Workspace:
    """The workspace a review opens in: the folder holding the output and its state file. Its port
    state is pointed at this migration when it has none yet."""
    ws = Workspace(state_path.parent)
    port = ws.read_state("port")
    if not port.get("out") and "_error" not in port:
        try:
            ws.update_state("port", src=str(review.src), out=str(review.out))
        except OSError:
            pass  # a read-only folder can still be reviewed; only the home screen's summary is missing
    return ws


def _translate(src: Path, out: Path, progress: Progress | None, backend: str = "auto"):
    from hipwizard.port.backends import BACKENDS
    from hipwizard.port.engine import translate_tree

    # Re-translate with the review's own backend, so unchanged files give the same hunks (and ids).
    backend = backend if backend in BACKENDS else "auto"
    return translate_tree(src, backend=backend, progress=progress, exclude=[out])


def start(ws: Workspace, src: str | Path, out: str | Path, progress: Progress | None = None) -> ReviewState:
    """Translate ``src`` with the engine, write a review (all pending) beside ``out``, and record the
    migration in the workspace. Raises ``UserError`` for a missing source or an unwritable place."""
    src_p = Path(src).expanduser()
    src_p = (src_p if src_p.is_absolute() else ws.root / src_p).resolve()
    out_p = Path(out).expanduser()
    out_p = (out_p if out_p.is_absolute() else ws.root / out_p).resolve()
    if not src_p.is_dir():
        raise UserError(f"source folder {src_p} does not exist")
    if out_p == src_p or src_p.is_relative_to(out_p):
        raise UserError("the output folder must not be the source folder or contain it")
    existing = state_path_for(out_p)
    if existing.exists():
        raise UserError(f"{existing} already holds a review; open it with `hipwizard review {out_p}` "
                        "(move it away to start over)")
    translations = _translate(src_p, out_p, progress)
    if not translations:
        raise UserError(f"no CUDA sources found in {src_p}")
    review = ReviewState.create(src_p, out_p, translations)
    try:
        review.save()
        ws.update_state("port", src=str(src_p), out=str(out_p))
    except OSError as exc:
        raise UserError(f"cannot write the review state {review.path}: {exc.strerror or exc}") from None
    return review


def refresh(review: ReviewState, progress: Progress | None = None) -> ReconcileReport | None:
    """When sources changed since the review started, re-translate and reconcile (saved). Returns the
    report, or None when nothing changed. A review from before untouched-line risks were stored (state
    version 1) gets them from a fresh translation; its decisions are not touched."""
    if not review.changed_sources():
        if review.needs_untouched and review.src.is_dir():
            review.set_untouched(_translate(review.src, review.out, progress, review.backend))
            try:
                review.save()  # now version 2
            except OSError:
                pass  # a read-only review still shows them, from memory
        return None
    return review.reconcile(_translate(review.src, review.out, progress, review.backend))
