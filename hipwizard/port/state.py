"""The port step's one-line status for the home screen and ``hipwizard status``.

The workspace's port state (``.hipwizard/port.json``) holds ``src`` (the CUDA tree) and ``out`` (the
output folder); the review state lives beside ``out`` (see ``review_state.state_path_for``). Whoever
starts a migration in a workspace (``hipwizard hipify``, the demo, the Port screen) writes both keys.
"""

from __future__ import annotations

from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.review_state import ReviewState, state_path_for
from hipwizard.workspace import StepStatus, Workspace


def review_path(ws: Workspace) -> Path | None:
    """The review state file of the workspace's migration, or None when no output is set yet."""
    out = ws.read_state("port").get("out")
    if not out:
        return None
    out_p = Path(out)
    return state_path_for(out_p if out_p.is_absolute() else ws.root / out_p)


def summarize(ws: Workspace) -> StepStatus:
    """"412 of 530 hunks decided, 3 high-risk pending" (in progress), or done once written cleanly."""
    state = ws.read_state("port")
    path = review_path(ws)
    if path is None or not path.exists():
        if state.get("src"):
            return StepStatus("in progress", f"source {state['src']} chosen, not translated yet")
        return StepStatus("not started", "no CUDA source chosen")
    try:
        review = ReviewState.load(path)
    except UserError as exc:
        return StepStatus("attention", str(exc))
    return status_of(review)


def status_of(review: ReviewState) -> StepStatus:
    c = review.counts()
    decided = c["total"] - c["pending"]
    text = f"{decided} of {c['total']} hunks decided"
    if c["high_pending"]:
        text += f", {c['high_pending']} high-risk pending"
    write = review.last_write or {}
    if write.get("compile_errors"):
        return StepStatus("attention", f"{text}; last write: {write['compile_errors']} compile error(s)")
    if c["pending"] == 0 and write.get("revision") == review.revision:
        return StepStatus("done", f"{text}; written to {review.out.name}/")
    if c["pending"] == 0:
        return StepStatus("in progress", f"{text}; not written yet")
    return StepStatus("in progress", text)
