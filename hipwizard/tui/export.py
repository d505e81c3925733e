"""Export the migration report from the TUI: the report's worker (``hipwizard.report.worker``, on the one job
protocol: matplotlib, and whatever the report reads, never load in the UI process), run from a worker thread
so the screen stays live."""

from __future__ import annotations

from pathlib import Path

from hipwizard.report.worker import export
from hipwizard.workspace import Workspace

REPORT_NAME = "hipwizard-report.html"


def export_report(ws: Workspace) -> Path:
    """Write ``<workspace>/hipwizard-report.html``; returns its path. Raises ``UserError`` with the report's
    one-line error when it fails."""
    out = ws.root / REPORT_NAME
    export(ws, out)
    return out
