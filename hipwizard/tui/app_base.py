"""What a screen may ask of the running app, declared once: ``WorkspaceApp`` (the workspace, and opening a
step). ``HipwizardApp`` is one; the screens type their ``app`` as one (``textual.getters.app``), so a type
checker sees every attribute they use.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from hipwizard.workspace import Workspace


class WorkspaceApp(App[Any]):
    workspace: Workspace  # the folder the wizard works in (state files, outputs)

    def action_open_step(self, key: str) -> None:
        """Open the step ``key`` (one of ``hipwizard.steps.STEP_KEYS``)."""
        raise NotImplementedError

    def action_next_step(self) -> None:
        """Open the first step that is not done."""
        raise NotImplementedError
