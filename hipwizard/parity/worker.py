"""The Parity step's heavy work in a subprocess, on the one job protocol (``hipwizard.jobs``):
``python -m hipwizard.parity.worker REQUEST_JSON``.

The UI process never imports torch; this process does, and dies with its memory when the job ends. Requests::

    {"request": CompareRequest.to_dict(), "workspace": DIR or null}          # services.run_comparison (default)
    {"job": "postmortem", "run_dir": DIR, "workspace": DIR, "step": N|null}  # postmortem.step_postmortem

Results (``{"event": "result", ...}``): ``{"outcome": CompareOutcome.to_dict(), "exit": N}`` for a
comparison; ``{"batch": PATH, "batch_meta": {...}, "report": PATH, "comparison": Comparison.to_dict(),
"exit": N}`` for a post-mortem (exit 1: the comparison found a divergence, a result). Progress and error
events as ``hipwizard.jobs`` says.

``WorkerRun`` (made by ``compare_in_worker``) is the comparison's other end, in the UI process;
``run_postmortem`` the post-mortem's. This module imports the services it runs, never the other way round;
the UI process imports it through the front door's lazy table, and its imports pull in no torch (the
services import torch inside their functions, which run only in the worker).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hipwizard.errors import UserError
from hipwizard.jobs import Job, run_job, serve
from hipwizard.parity import services
from hipwizard.parity.postmortem import step_postmortem
from hipwizard.parity.requests import CompareOutcome, CompareRequest
from hipwizard.progress import ProgressFn
from hipwizard.workspace import Workspace

MODULE = "hipwizard.parity.worker"
POSTMORTEM_TIMEOUT_S = 3600


class WorkerRun:
    """One comparison in a worker subprocess: ``run`` blocks (call it in a thread), ``stop`` kills it."""

    def __init__(self, request: CompareRequest, workspace: Path | None, *, cwd: Path | None = None):
        self.job = Job(MODULE, {"request": request.to_dict(), "workspace": str(workspace) if workspace else None},
                       what="comparison", cwd=cwd)

    def run(self, progress: ProgressFn | None = None) -> CompareOutcome:
        """Start the worker and wait for its outcome (a ``CompareOutcome``); UserError with the
        worker's one line when it fails, and when it was stopped."""
        return CompareOutcome.from_dict(self.job.run(progress)["outcome"])

    def stop(self) -> None:
        """Kill the worker (from any thread, before or while it runs); ``run`` then raises 'stopped'."""
        self.job.stop()


def compare_in_worker(request: CompareRequest, ws: Workspace | None) -> WorkerRun:
    """``services.run_comparison`` in a subprocess, not started yet: the caller runs ``.run(progress)`` (blocks
    until the outcome) in a thread and may ``.stop()`` it from another."""
    return WorkerRun(request, ws.root if ws is not None else None)


def run_postmortem(ws: Workspace, run_dir: str | Path, *, step: int | None = None,
                   progress: ProgressFn | None = None) -> dict[str, Any]:
    """The post-mortem of ``run_dir`` in a worker: its result fields (batch, batch_meta, report, comparison).
    The comparison is recorded in the workspace. ``UserError`` with the worker's line."""
    return run_job(MODULE, {"job": "postmortem", "run_dir": str(run_dir), "workspace": str(ws.root), "step": step},
                   what="post-mortem", progress=progress, timeout_s=POSTMORTEM_TIMEOUT_S)


def _handle(request: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    ws = Workspace.open(request["workspace"]) if request.get("workspace") else None
    if request.get("job", "compare") == "postmortem":
        if ws is None or not isinstance(request.get("run_dir"), str):
            raise UserError("bad worker request: a post-mortem needs run_dir and workspace")
        step = request.get("step")
        batch, outcome = step_postmortem(ws, request["run_dir"], step=step if isinstance(step, int) else None,
                                    progress=progress)
        return {"batch": str(batch.path), "batch_meta": batch.meta, "report": str(outcome.report),
                "comparison": outcome.comparison.to_dict(), "exit": outcome.exit_code}
    try:
        compare = CompareRequest.from_dict(request["request"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"bad worker request: {exc}") from None
    outcome = services.run_comparison(compare, ws=ws, progress=progress)
    return {"outcome": outcome.to_dict(), "exit": outcome.exit_code}


def main(argv: list[str] | None = None) -> int:
    return serve(_handle, argv, usage=f"python -m {MODULE} REQUEST_JSON")


if __name__ == "__main__":
    sys.exit(main())
