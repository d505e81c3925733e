"""The embedded demo workspace: a full tour with no GPU, no ROCm and no model.

Each step contributes its part through ``hipwizard.<step>.demo.prepare(workspace)`` (copy the demo
CUDA project, point parity and training at the tiny model, ...). Nothing heavy runs here: the tiny
model is built later, in a subprocess, by the step that needs it.
"""

from __future__ import annotations

import importlib

from hipwizard.paths import cache_dir
from hipwizard.steps import STEP_KEYS
from hipwizard.workspace import Workspace


def prepare_demo_workspace() -> Workspace:
    ws = Workspace(cache_dir() / "demo-workspace")
    ws.root.mkdir(parents=True, exist_ok=True)
    ws.touch(demo=True)
    for step in STEP_KEYS:
        importlib.import_module(f"hipwizard.{step}.demo").prepare(ws)
    return ws
