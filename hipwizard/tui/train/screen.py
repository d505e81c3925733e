"""Step 4: the Train screen — "Plan" (the config forms) and "Run" (launch, live view, stop, attach)."""

from __future__ import annotations

from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import Footer, Header, TabbedContent, TabPane

from hipwizard import train
from hipwizard.gpu import GpuTelemetry
from hipwizard.tui.step_screen import StepScreen
from hipwizard.tui.train.dialogs import ConfirmAction
from hipwizard.tui.train.plan import TrainPlanPane
from hipwizard.tui.train.run_view import RunView

RUN_TAB_ONLY = ("stop", "attach", "refresh", "next", "previous", "postmortem", "resume", "nccl_debug")  # the Run tab's list or attached run

# What ``run('…')`` and ``plan('…')`` in BINDINGS do, by name: a misspelt name fails here, at import.
RUN_ACTIONS: dict[str, Callable[[RunView], object]] = {
    "launch": RunView.action_launch, "demo": RunView.action_demo, "stop": RunView.action_stop,
    "attach": RunView.action_attach, "postmortem": RunView.action_postmortem, "refresh": RunView.action_refresh,
    "next": RunView.action_next, "previous": RunView.action_previous, "resume": RunView.action_resume,
    "nccl_debug": RunView.action_nccl_debug,
}
PLAN_ACTIONS: dict[str, Callable[[TrainPlanPane], object]] = {
    "save": TrainPlanPane.action_save, "apply_suggestion": TrainPlanPane.action_apply_suggestion,
    "next_suggestion": TrainPlanPane.action_next_suggestion, "calibrate": TrainPlanPane.action_calibrate,
    "toggle_not_offered": TrainPlanPane.action_toggle_not_offered,
}


class TrainScreen(StepScreen):
    step_key = "train"
    CSS_PATH = "train.tcss"
    help_title = "Train"
    help_text = (
        "Plan: edit the LLaMA-Factory config, see whether it fits in GPU memory, save a run directory "
        "(ctrl+s), or save and launch it (x, asks first). The advisor's suggestion marked ▶ is applied with "
        "ctrl+g; ctrl+n marks the next one.\n"
        "Run: the runs of this workspace on the left (enter or o attaches). x launches the highlighted run dir "
        "(asks first), D launches a short demo LoRA run on CPU, X stops the attached run (asks first; the "
        "Trainer saves, then the whole process group is ended), r refreshes the list. A run with no new step for "
        "max(3 x its median step time, 5 min) is ⏸ stalled (a bell and a notice); on a stall or a failure its "
        "stacks, GPU state, kernel log and NCCL lines are saved in incident.txt and named (GPU hang, memory fault, "
        "collective timeout, ...) with a fix. R resumes an ended run from its newest checkpoint (asks first), N runs "
        "it again with NCCL_DEBUG=INFO. P, on a run with a NaN/inf "
        "loss or a grad_norm spike: rebuilds that step's batch exactly as the trainer fed it and opens Parity "
        "on it (forward and backward against a float64 CPU reference).\n"
        "Training runs detached: quitting hipwizard or losing SSH never stops it; come back and attach."
    )

    # On the screen, not the RunView, so they work wherever focus is (tabs included); check_action hides
    # the Run tab's own keys while the Plan tab is shown.
    BINDINGS = [
        Binding("x", "run('launch')", "Launch", id="train.launch"),
        Binding("D", "run('demo')", "Demo", id="train.demo"),
        Binding("X", "run('stop')", "Stop", id="train.stop"),
        Binding("o", "run('attach')", "Attach", id="train.attach"),
        Binding("P", "run('postmortem')", "Post-mortem", id="train.postmortem"),
        Binding("r", "run('refresh')", "Refresh", id="train.refresh"),
        Binding("R", "run('resume')", "Resume", id="train.resume"),
        Binding("N", "run('nccl_debug')", "NCCL debug", show=False, id="train.nccl_debug"),
        Binding("j", "run('next')", "Next run", show=False, id="train.next"),
        Binding("k", "run('previous')", "Previous run", show=False, id="train.previous"),
        # The Plan tab's keys, here too: on entering the screen focus is on no field of the pane (its own
        # bindings only fire with focus inside it), and the keys must work on the tab that is shown.
        Binding("ctrl+s", "plan('save')", "Save", id="plan.save"),
        Binding("ctrl+g", "plan('apply_suggestion')", "Apply", id="plan.apply"),
        Binding("ctrl+n", "plan('next_suggestion')", "Next", id="plan.next_suggestion"),
        Binding("C", "plan('calibrate')", "Calibrate", id="plan.calibrate"),
        Binding("ctrl+o", "plan('toggle_not_offered')", "Why not offered", show=False, id="plan.not_offered"),
    ]

    def __init__(self, *, telemetry=None, host_probe=None, poll_s: float = 1.0, attach: str | None = None) -> None:
        super().__init__()
        self._telemetry = telemetry
        self._host_probe = host_probe
        self._poll_s = poll_s
        self._attach_to = attach

    def heading(self) -> str:
        return f"{self.help_title} ({'Run' if self._run_tab_active() else 'Plan'} tab)"

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="run" if self._attach_to else "plan", id="train-tabs"):
            with TabPane("Plan", id="plan"):
                yield TrainPlanPane()
            with TabPane("Run", id="run"):
                yield RunView(self.app.workspace, telemetry=self._telemetry or GpuTelemetry(),
                              host_probe=self._host_probe or train.host_sample, poll_s=self._poll_s)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self._attach_to:
            self.query_one(RunView).attach(self._attach_to)

    def _run_tab_active(self) -> bool:
        try:
            return self.query_one("#train-tabs", TabbedContent).active == "run"
        except NoMatches:  # not composed yet
            return False

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "run" and parameters and parameters[0] == "postmortem":
            # only where it can act: the footer has no room for a key that would only say "no alarm"
            return self._run_tab_active() and self.query_one(RunView).has_alarm
        if action == "run" and parameters and parameters[0] == "resume":
            snap = self.query_one(RunView).snap  # only on a run that ended without finishing: it can act there
            return self._run_tab_active() and snap is not None and snap.state in ("failed", "lost", "stopped")
        if action == "run" and parameters and parameters[0] == "stop" and not self._run_tab_active():
            return self.query_one(TrainPlanPane).calibrating  # X on the Plan tab stops a calibration
        if action == "run" and parameters and parameters[0] in RUN_TAB_ONLY:
            return self._run_tab_active()
        if action == "plan":  # the active tab decides, not where focus happens to be
            return not self._run_tab_active() and self.query_one(TrainPlanPane).check_action(parameters[0], ())
        return True

    def action_plan(self, what: str) -> None:
        PLAN_ACTIONS[what](self.query_one(TrainPlanPane))

    def action_run(self, what: str) -> None:
        if what == "launch" and not self._run_tab_active():
            self._launch_plan()
            return
        if what == "stop" and not self._run_tab_active():
            self.query_one(TrainPlanPane).action_stop_calibration()
            return
        if what == "demo":  # from either tab: the run shows on the Run tab
            self.query_one("#train-tabs", TabbedContent).active = "run"
        RUN_ACTIONS[what](self.query_one(RunView))

    def _launch_plan(self) -> None:
        """x on the Plan tab: save the plan as a run directory and launch it, after a confirmation."""
        pane = self.query_one(TrainPlanPane)
        problem = pane.save_problem()
        if problem:
            self.notify(f"✖ not launched: {problem}", severity="error")
            return
        question = f"Save the plan as {pane.run_dir_name()} and launch it?"
        detail = "llamafactory-cli train runs detached: quitting hipwizard does not stop it."

        def answered(ok: bool | None) -> None:
            run_dir = pane.action_save() if ok else None
            if run_dir is not None:
                self.query_one(RunView).launch(run_dir)

        self.app.push_screen(ConfirmAction(question, detail, "Launch"), answered)

    @on(TabbedContent.TabActivated, "#train-tabs")
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    def on_train_plan_pane_saved(self, message: TrainPlanPane.Saved) -> None:
        """A run directory was saved in the Plan tab: show it in the Run tab, ready to launch."""
        self.query_one("#train-tabs", TabbedContent).active = "run"
        self.query_one(RunView).select(str(message.run_dir))
