"""The Run view's post-mortem (P): the parity worker's post-mortem job (LLaMA-Factory and torch load there,
never in the UI process), run from a worker thread; its comparison is recorded in the workspace, where the
Parity screen shows it."""

from __future__ import annotations

from pathlib import Path

from hipwizard import parity
from hipwizard.workspace import Workspace


def run_postmortem(ws: Workspace, run_dir: str | Path) -> dict:
    """The post-mortem's result (batch, batch_meta, report, comparison). ``UserError`` with its one line."""
    return parity.run_postmortem(ws, run_dir)
