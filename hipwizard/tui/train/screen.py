"""Step 4: the Train screen — "Plan" (the config forms) and "Run" (launch, live view, stop, attach)."""

from __future__ import annotations

import importlib.util

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane

from hipwizard.tui.train.run_view import RunView


def _plan_available() -> bool:
    return importlib.util.find_spec("hipwizard.tui.train.plan") is not None


class TrainScreen(Screen):
    step_key = "train"
    CSS_PATH = "train.tcss"
    HELP_TITLE = "Train"
    HELP_TEXT = (
        "Plan: edit the LLaMA-Factory config, see whether it fits in GPU memory, save a run directory.\n"
        "Run: the runs of this workspace on the left (enter attaches). l launches the highlighted run dir, "
        "d launches a short demo LoRA run on CPU, s stops the attached run (the Trainer saves first, then "
        "the whole process group is ended), r refreshes the list.\n"
        "Training runs detached: quitting hipwizard or losing SSH never stops it; come back and attach."
    )

    # On the screen, not the RunView, so they work wherever focus is in the Run tab (tabs included);
    # check_action disables them while the Plan tab is shown.
    BINDINGS = [
        Binding("l", "run('launch')", "Launch", id="train.launch"),
        Binding("d", "run('demo')", "Demo run", id="train.demo"),
        Binding("s", "run('stop')", "Stop", id="train.stop"),
        Binding("a", "run('attach')", "Attach", id="train.attach"),
        Binding("r", "run('refresh')", "Refresh", id="train.refresh"),
    ]

    def __init__(self, *, telemetry=None, host_probe=None, poll_s: float = 1.0, attach: str | None = None) -> None:
        super().__init__()
        self._telemetry = telemetry
        self._host_probe = host_probe
        self._poll_s = poll_s
        self._attach_to = attach

    def compose(self) -> ComposeResult:
        from hipwizard.gpu import GpuTelemetry
        from hipwizard.train.snapshot import host_sample

        ws = self.app.workspace
        yield Header()
        with TabbedContent(initial="run" if self._attach_to or not _plan_available() else "plan", id="train-tabs"):
            if _plan_available():
                from hipwizard.tui.train.plan import TrainPlanPane

                with TabPane("Plan", id="plan"):
                    yield TrainPlanPane()
            with TabPane("Run", id="run"):
                yield RunView(ws.runs_dir, telemetry=self._telemetry or GpuTelemetry(),
                              host_probe=self._host_probe or host_sample, poll_s=self._poll_s)
        yield Footer()

    def on_mount(self) -> None:
        if self._attach_to:
            self.query_one(RunView).attach(self._attach_to)

    def _run_tab_active(self) -> bool:
        try:
            return self.query_one("#train-tabs", TabbedContent).active == "run"
        except Exception:
            return False

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "run":
            return self._run_tab_active()
        return True

    def action_run(self, what: str) -> None:
        getattr(self.query_one(RunView), f"action_{what}")()

    @on(TabbedContent.TabActivated, "#train-tabs")
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    def on_train_plan_pane_saved(self, message) -> None:
        """A run directory was saved in the Plan tab: show it in the Run tab, ready to launch."""
        self.query_one("#train-tabs", TabbedContent).active = "run"
        self.query_one(RunView).select(str(message.run_dir))
