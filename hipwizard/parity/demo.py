"""The embedded demo's Parity part: point the step at the tiny Llama (built later, in the worker)."""

from __future__ import annotations

from hipwizard.workspace import Workspace


def prepare(ws: Workspace) -> None:
    """Mark the workspace so the dashboard offers `r` (fp64 CPU reference vs bf16 candidate). Nothing heavy."""
    state = ws.read_state("parity")
    if not state.get("demo"):
        ws.update_state("parity", demo=True)
