"""The port step's saved state, ``.hipwizard/port.json``: its sole owner.

Format (JSON object, written atomically by ``Workspace``)::

    {"version": 1, "updated": ISO time,
     "src": "DIR",    # the CUDA tree under migration (relative to the workspace when inside it)
     "out": "DIR",    # the HIP output folder; the review state lives beside it (``<out>.review.json``)
     "mode": "fork" | "dual", "guard": "USE_ROCM"}  # the workspace's output mode (absent: fork) and, in the
                      # dual-target mode, the project's guard macro

``PortLink`` is that pair, typed. Whoever starts a migration in a workspace (``hipwizard hipify``, the demo,
the Port screen, all through ``services``) records it with ``record_link``. ``locate`` finds a review from
what a user types; ``summarize`` is the step's line on the Home screen and in ``hipwizard status``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.review.state import ReviewState, state_path_for
from hipwizard.workspace import STATE_DIRNAME, StepStatus, Workspace

STEP = "port"


@dataclass(frozen=True)
class PortLink:
    """The workspace's migration: its source tree and output folder (absolute; None when not chosen)."""

    src: Path | None = None
    out: Path | None = None
    error: str = ""
    mode: str = "fork"  # "fork" (a HIP copy) or "dual" (one source for NVIDIA and AMD), chosen per workspace
    guard: str = ""  # the dual-target mode's guard macro ("" in fork mode)  # port.json exists but cannot be read (kept as it is; a new link may replace it)

    @property
    def review_path(self) -> Path | None:
        return state_path_for(self.out) if self.out is not None else None


def read_link(ws: Workspace) -> PortLink:
    """The recorded migration; relative paths are taken from the workspace folder."""
    saved = ws.state_file(STEP)
    if saved.error:
        return PortLink(error=saved.error)
    data = saved.data

    def path(key: str) -> Path | None:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else ws.root / p

    mode = str(data["mode"]) if data.get("mode") in ("fork", "dual") else "fork"
    guard = str(data["guard"]) if isinstance(data.get("guard"), str) and mode == "dual" else ""
    return PortLink(path("src"), path("out"), mode=mode, guard=guard)


def record_link(ws: Workspace, src: str | Path, out: str | Path, *, mode: str | None = None,
                guard: str | None = None) -> None:
    """Record ``src`` -> ``out`` as the workspace's migration: relative to the workspace when inside it (a
    copied workspace then points at its own copies), absolute otherwise; with ``mode`` (and ``guard``), the
    workspace's output mode. Raises ``OSError``."""
    extra = {} if mode is None else {"mode": mode, "guard": guard or ""}
    ws.update_state(STEP, src=_stored(ws, src), out=_stored(ws, out), **extra)


def _stored(ws: Workspace, path: str | Path) -> str:
    p = Path(path).expanduser()
    p = (p if p.is_absolute() else ws.root / p).resolve()
    root = ws.root.resolve()
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)


def link_unless_set(ws: Workspace, src: str | Path, out: str | Path) -> bool:
    """Record the migration when the workspace has none (or an unreadable one); never replaces a
    readable link. Returns whether it recorded. Raises ``OSError``."""
    link = read_link(ws)
    if link.src is not None and not link.error:
        return False
    record_link(ws, src, out)
    return True


def review_path(ws: Workspace) -> Path | None:
    """The review state file of the workspace's migration, or None when no output is set yet."""
    return read_link(ws).review_path


def locate(target: str | Path) -> Path:
    """The review state file for ``target``: a workspace folder (its port step's output), an output
    folder (``<out>.review.json`` beside it) or a ``*.review.json`` file. Raises ``UserError``."""
    p = Path(target).expanduser()
    if p.is_file() and p.name.endswith(".review.json"):
        return p.resolve()
    if (p / STATE_DIRNAME).is_dir():
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


def review_workspace(target: str | Path, state_path: Path) -> Workspace:
    """The workspace a located review belongs to: ``target`` when it is a workspace folder, else the
    folder holding the review state (where ``hipwizard hipify`` users usually run)."""
    p = Path(target).expanduser()
    return Workspace(p) if (p / STATE_DIRNAME).is_dir() else Workspace(state_path.parent)


def workspace_for(state_path: Path, review: ReviewState) -> Workspace:
    """The workspace a review opens in (``hipwizard review``): the folder holding the output and its state
    file. Its port state is pointed at this migration when it has none yet."""
    ws = Workspace(state_path.parent)
    link = read_link(ws)
    if link.out is None and not link.error:
        try:
            record_link(ws, review.src, review.out)
        except OSError:
            pass  # a read-only folder can still be reviewed; only the home screen's summary is missing
    return ws


def summarize(ws: Workspace) -> StepStatus:
    """"412 of 530 hunks decided, 3 high-risk pending" (in progress), or done once written cleanly."""
    link = read_link(ws)
    path = link.review_path
    if path is None or not path.exists():
        if link.src is not None:
            return StepStatus("in progress", f"source {link.src} chosen, not translated yet")
        return StepStatus("not started", "no CUDA source chosen")
    try:
        review = ReviewState.load(path)
    except UserError as exc:
        return StepStatus("attention", str(exc))
    return status_of(review)


def status_of(review: ReviewState) -> StepStatus:
    c = review.counts()
    decided = c.total - c.pending
    text = f"{decided} of {c.total} hunks decided"
    if c.high_pending:
        text += f", {c.high_pending} high-risk pending"
    write = review.last_write
    if write is not None and write.compile_errors:
        n = write.compile_errors  # files that failed the check, not errors
        return StepStatus("attention", f"{text}; last write: {n} file{'s' if n != 1 else ''} with compile errors")
    if c.pending == 0 and write is not None and write.revision == review.revision:
        return StepStatus("done", f"{text}; written to {review.out.name}/")
    if c.pending == 0:
        return StepStatus("in progress", f"{text}; not written yet")
    return StepStatus("in progress", text)
