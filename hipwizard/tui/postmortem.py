"""The Run view's post-mortem (P): ``hipwizard parity postmortem RUN`` in a subprocess (LLaMA-Factory and torch
load there, never in the UI process), run from a worker; its comparison is recorded in the workspace, where
the Parity screen shows it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.workspace import Workspace

TIMEOUT_S = 3600


def run_postmortem(ws: Workspace, run_dir: str | Path) -> dict:
    """The post-mortem's JSON (batch, comparison). ``UserError`` with the command's one-line error."""
    try:
        done = subprocess.run([sys.executable, "-m", "hipwizard", "parity", "postmortem", str(run_dir),
                               "--workspace", str(ws.root), "--json"], capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"the post-mortem took over {TIMEOUT_S} s and was stopped") from None
    if done.returncode not in (0, 1):  # 1: the comparison found a divergence — a result, not an error
        last = next((x for x in reversed(done.stderr.splitlines()) if x.strip()), f"exit {done.returncode}")
        raise UserError(last.strip().removeprefix("hipwizard: error: "))
    return json.loads(done.stdout)
