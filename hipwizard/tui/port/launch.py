"""``hipwizard review DIR``: the app, opened straight on the Port screen of one review."""

from __future__ import annotations

from pathlib import Path

from hipwizard.port import ReviewState, workspace_for


def run_review(state_path: Path) -> None:
    """Run the app on the workspace holding the review at ``state_path``, the Port screen on top of Home."""
    from hipwizard.tui.app import HipwizardApp
    from hipwizard.tui.port.screen import PortScreen

    ws = workspace_for(state_path, ReviewState.load(state_path))

    class ReviewApp(HipwizardApp):
        def on_mount(self) -> None:
            # Home is the bottom screen (HipwizardApp.get_default_screen): open the review on top of it.
            self.call_later(self.push_screen, PortScreen(state_path))

    ReviewApp(ws, resume=False).run()
