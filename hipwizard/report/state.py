"""The report's workspace state, ``.hipwizard/report.json``: its sole reader and writer.

Format (JSON object, written atomically by ``Workspace``)::

    {"version": 1, "updated": ISO time,
     "written": {"/abs/report.html": "sha256 hex", ...}}   # what each report file held when hipwizard wrote it

``make_report`` asks ``written_digests`` whether a file at the target is the one hipwizard wrote last (and so
may be replaced without ``force``), and records each file it writes with ``record_written``.
"""

from __future__ import annotations

from pathlib import Path

from hipwizard.workspace import Workspace, register_state_fields

STEP = "report"
STATE_FIELDS = {"written": dict}  # checked by Workspace.state_file
register_state_fields(STEP, STATE_FIELDS)


def written_digests(ws: Workspace) -> dict[str, str]:
    """Report file path -> the sha256 of what hipwizard wrote there last (damaged entries left out)."""
    raw = ws.read_state(STEP).get("written")
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def record_written(ws: Workspace, digests: dict[Path, str]) -> None:
    """Remember the files just written with their digests (others kept). Raises ``OSError``."""
    record = written_digests(ws)
    record.update({str(p): d for p, d in digests.items()})
    ws.update_state(STEP, written=record)
