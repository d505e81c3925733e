"""The embedded demo's Parity part: point the step at the tiny Llama (built later, in the worker)."""

from __future__ import annotations

from hipwizard.parity.state import mark_demo
from hipwizard.workspace import Workspace


def prepare(ws: Workspace) -> None:
    """Mark the workspace so the dashboard offers D (fp64 CPU reference vs bf16 candidate). Nothing heavy."""
    mark_demo(ws)
