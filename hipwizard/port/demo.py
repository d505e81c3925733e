"""The embedded demo's port step: a copy of the demo CUDA project as the migration source.

``prepare(ws)`` copies ``assets/demo/cuda_project`` into the workspace (once: a copy the user changed is
kept) and records it in the workspace's port state: ``src`` = that copy, ``out`` = ``hip_project`` beside it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hipwizard.port.state import link_unless_set
from hipwizard.workspace import Workspace

DEMO_PROJECT = Path(__file__).resolve().parent.parent / "assets" / "demo" / "cuda_project"


def prepare(ws: Workspace) -> None:
    src = ws.root / "cuda_project"
    if not src.exists():
        shutil.copytree(DEMO_PROJECT, src)
    link_unless_set(ws, src, ws.root / "hip_project")
