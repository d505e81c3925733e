"""Export the migration report from the TUI: ``hipwizard report`` in a subprocess (matplotlib, and whatever the
report reads, never load in the UI process), run from a worker so the screen stays live."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.workspace import Workspace

REPORT_NAME = "hipwizard-report.html"
TIMEOUT_S = 300


def export_report(ws: Workspace) -> Path:
    """Write ``<workspace>/hipwizard-report.html``; returns its path. Raises ``UserError`` with the command's
    one-line error when it fails."""
    out = ws.root / REPORT_NAME
    try:
        done = subprocess.run([sys.executable, "-m", "hipwizard", "report", str(ws.root), "--out", str(out)],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"the report took over {TIMEOUT_S} s and was stopped") from None
    if done.returncode != 0:
        last = next((x for x in reversed(done.stderr.splitlines()) if x.strip()), f"exit {done.returncode}")
        raise UserError(f"report not written: {last.strip()}")
    return out
