"""The report written in a subprocess, on the one job protocol (``hipwizard.jobs``):
``python -m hipwizard.report.worker REQUEST_JSON`` (matplotlib, and whatever the report reads, load there).

Requests::

    {"workspace": DIR, "out": FILE, "full": false, "force": false}     # the report -> {"written": [PATH, ...]}
    {"job": "demo-step", "step": NAME, "workspace": DIR}               # one demo step -> {"step", "summary"}

``export(ws, out)`` is the report's caller side, ``hipwizard.report.demo.fill`` the demo steps'
(``hipwizard.report.demo_steps`` runs them here: torch and LLaMA-Factory load in this process).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hipwizard.errors import UserError
from hipwizard.jobs import run_job, serve
from hipwizard.progress import ProgressFn
from hipwizard.report import make_report
from hipwizard.report.demo_steps import STEPS, run_step
from hipwizard.workspace import Workspace

MODULE = "hipwizard.report.worker"
TIMEOUT_S = 300


def export(ws: Workspace, out: Path, *, progress: ProgressFn | None = None) -> list[Path]:
    """Write the report of ``ws`` to ``out`` in a worker; the files written. ``UserError`` with its line."""
    result = run_job(MODULE, {"workspace": str(ws.root), "out": str(out)}, what="report", progress=progress,
                     timeout_s=TIMEOUT_S)
    return [Path(p) for p in result.get("written", [])]


def _handle(request: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    if request.get("job") == "demo-step":
        if request.get("step") not in STEPS or not isinstance(request.get("workspace"), str):
            raise UserError(f"bad worker request: a demo step needs workspace and step (one of {', '.join(STEPS)})")
        ws = Workspace.open(request["workspace"], must_exist=True)
        return {"step": request["step"], "summary": run_step(ws, request["step"], progress)}
    if not isinstance(request.get("workspace"), str) or not isinstance(request.get("out"), str):
        raise UserError("bad worker request: a report needs workspace and out")
    written = make_report(Workspace.open(request["workspace"], must_exist=True), request["out"],
                          full=request.get("full") is True, force=request.get("force") is True)
    return {"written": [str(p) for p in written]}


def main(argv: list[str] | None = None) -> int:
    return serve(_handle, argv, usage=f"python -m {MODULE} REQUEST_JSON")


if __name__ == "__main__":
    sys.exit(main())
