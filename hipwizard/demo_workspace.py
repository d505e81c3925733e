"""The embedded demo workspace: a full tour with no GPU, no ROCm and no model.

Each step contributes its part through ``hipwizard.<step>.demo.prepare(workspace)`` (copy the demo
CUDA project, point parity and training at the tiny model, ...). Nothing heavy runs here: the tiny
model is built later, in a subprocess, by the step that needs it.

One demo workspace, one hipwizard: each holds a lock on its workspace (``.hipwizard/demo.lock``, an
``flock`` the system drops when the process ends, even on ``kill -9``). ``hipwizard --demo`` takes the
shared one in the user cache, so the tour's progress is kept from one session to the next; a second
instance started while the first runs gets a workspace of its own (``demo-workspace-2``, ...) and says
so, instead of both writing the same state. ``hipwizard --demo DIR`` uses DIR, and refuses while another
instance holds it.
"""

from __future__ import annotations

import fcntl
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.paths import cache_dir
from hipwizard.steps import STEP_KEYS
from hipwizard.workspace import STATE_DIRNAME, Workspace

LOCK_NAME = "demo.lock"
MAX_INSTANCES = 50
_held: dict[Path, int] = {}  # workspace root -> open, locked file descriptor (kept for the process's life)


@dataclass(frozen=True)
class DemoWorkspace:
    workspace: Workspace
    notice: str = ""  # one line when this instance did not get the workspace it would have had


def _try_lock(root: Path) -> tuple[bool, str]:
    """(locked by us, pid of the holder when not)."""
    root = root.resolve()
    if root in _held:
        return True, ""
    state_dir = root / STATE_DIRNAME
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UserError(f"cannot use {root} as a demo workspace: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        return False, holder
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[root] = fd
    return True, ""


def open_demo_workspace(root: str | Path | None = None) -> DemoWorkspace:
    """The demo workspace this instance may use, locked and prepared. ``root`` None: the shared one, else
    the first free ``demo-workspace-N`` (with a notice saying why); ``root`` given: that folder, or
    ``UserError`` when another instance holds it."""
    if root is not None:
        ws = Workspace.open(root)
        locked, holder = _try_lock(ws.root)
        if not locked:
            raise UserError(f"{ws.root} is open in another hipwizard --demo (pid {holder or '?'}); "
                            "close it or name another folder")
        return DemoWorkspace(_prepare(ws))
    shared = cache_dir() / "demo-workspace"
    first_holder = ""
    for n in range(1, MAX_INSTANCES + 1):
        path = shared if n == 1 else shared.with_name(f"demo-workspace-{n}")
        locked, holder = _try_lock(path)
        if locked:
            notice = "" if n == 1 else (f"the demo workspace {shared} is in use by another hipwizard "
                                        f"(pid {first_holder or '?'}); this one uses {path}")
            return DemoWorkspace(_prepare(Workspace(path)), notice)
        if n == 1:
            first_holder = holder
    raise UserError(f"{MAX_INSTANCES} demo workspaces are in use (the first by pid {first_holder or '?'}); "
                    "close one, or name a folder: hipwizard --demo DIR")


def prepare_demo_workspace() -> Workspace:
    """The demo workspace for this process (see ``open_demo_workspace``)."""
    return open_demo_workspace().workspace


def _prepare(ws: Workspace) -> Workspace:
    ws.root.mkdir(parents=True, exist_ok=True)
    ws.touch(demo=True)
    for step in STEP_KEYS:
        importlib.import_module(f"hipwizard.{step}.demo").prepare(ws)
    return ws
