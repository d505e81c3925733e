"""The Plan tab's calibration: ``CalibrationBar`` (a progress bar and one line of state while ``calibrate``
runs, and what it found afterwards) and ``PlanCalibration``, the actions ``TrainPlanPane`` mixes in (C
asks for K and N — candidates and steps each — then starts ``train.calibrate_plan`` in a thread
worker; X stops it after asking; the candidates
themselves are separate process groups started by the launcher, so this process never imports torch).

Every state is said in words and a symbol (▶ running, ■ stopping/stopped, ✔ done, ✖ failed), never by
colour alone.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, ProgressBar, Static

from hipwizard import train
from hipwizard.progress import Progress
from hipwizard.tui.train.dialogs import CalibrateDialog, ConfirmAction

if TYPE_CHECKING:
    from textual import getters
    from textual.containers import Vertical

    from hipwizard.train import LaunchOptions, Plan, TrainConfig
    from hipwizard.tui.app_base import WorkspaceApp
    from hipwizard.tui.workers import Jobs

    class _PaneBase(Jobs, Vertical):
        """For the type checker only: the pane ``PlanCalibration`` is mixed into (``start_job``, widget API)."""
else:
    _PaneBase = object


def summary(cal) -> Text:
    """One line on a finished (or stopped) calibration: how many configs were measured, and where it shows."""
    good, total = len(cal.good), len(cal.measurements)
    if cal.stopped:
        return Text(f"■ stopped after {cal.wall_s:.0f} s: {good} config(s) measured and kept; "
                    "the advisor marks them 'measured here'", style="yellow")
    if not good:
        why = next((m.error for m in cal.measurements if m.error), "nothing ran")
        return Text(f"✖ calibration measured nothing: {why}", style="red")
    failed = f", {total - good} failed (dropped by the advisor)" if good < total else ""
    return Text(f"✔ calibrated in {cal.wall_s:.0f} s: {good} of {total} config(s) measured{failed}; "
                "numbers below say measured here / calibrated here / predicted", style="green")


class CalibrationBar(Horizontal):
    """Hidden until the first calibration; then a bar (steps done of all candidates' steps) and a line."""

    DEFAULT_CSS = """
    CalibrationBar { height: auto; padding: 0 1; display: none; }
    CalibrationBar.-shown { display: block; }
    CalibrationBar ProgressBar { width: auto; padding: 0 1 0 0; }
    CalibrationBar #plan-calibrate-status { width: 1fr; }
    CalibrationBar.-done ProgressBar { display: none; }
    """

    def compose(self) -> ComposeResult:
        yield ProgressBar(total=None, show_eta=False, id="plan-calibrate-bar")
        yield Static("", id="plan-calibrate-status")

    def _status(self, text: Text | str) -> None:
        self.query_one("#plan-calibrate-status", Static).update(text)

    def started(self, candidates: int, steps: int) -> None:
        self.add_class("-shown")
        self.remove_class("-done")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._status(f"▶ calibrating: planning the top {candidates} candidate(s), {steps} steps each … (X stops)")

    def advanced(self, progress: Progress) -> None:
        bar = self.query_one(ProgressBar)
        if progress.total:
            bar.update(total=progress.total, progress=progress.done or 0)
        if not progress.finished:
            self._status(f"▶ {progress.text()} (X stops)")

    def stopping(self) -> None:
        self._status(Text("■ stopping the candidate's run (its whole process group) …", style="yellow"))

    def finished(self, cal) -> None:
        self.add_class("-done")
        self._status(summary(cal))

    def failed(self, text: str) -> None:
        self.add_class("-shown", "-done")
        self._status(Text(f"✖ calibration failed: {text}", style="red"))

    @property
    def status_text(self) -> str:
        return str(self.query_one("#plan-calibrate-status", Static).render())


class PlanCalibration(_PaneBase):
    """Mixin for ``TrainPlanPane`` (which provides ``config``, ``document``, ``base_dir``, ``plan``,
    ``field_errors``, ``_int``, ``_schedule``, ``start_job`` and the ``calibrate_*`` settings)."""

    # What TrainPlanPane holds, declared:
    config: TrainConfig
    document: Any  # the recipe's YAML document (comments kept), None for a fresh form
    base_dir: Path
    plan: Plan | None
    field_errors: dict[str, str]
    calibrate_candidates: int
    calibrate_steps: int
    calibrate_warmup: int
    calibrate_options: LaunchOptions | None
    _stop_calibration: threading.Event | None = None
    if TYPE_CHECKING:
        app = getters.app(WorkspaceApp)  # typed for the checker; at run time Textual's own property

        def _int(self, selector: str, default: Any) -> Any: ...

        def _schedule(self) -> None: ...

    @property
    def calibrating(self) -> bool:
        return self._stop_calibration is not None

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "stop_calibration":
            return self.calibrating  # X shows only while there is something to stop
        return True

    def calibrate_problem(self) -> str | None:
        """Why the form cannot be calibrated now, or None."""
        if self.calibrating:
            return "a calibration is already running (X stops it)"
        if getattr(self.app, "workspace", None) is None:
            return "no workspace to keep the calibration in"
        if self.field_errors or self.plan is None or not self.plan.valid:
            return "fix the errors first" if self.plan is not None or self.field_errors else "the plan is not ready yet"
        if self._int("#plan-gpus", 1) != 1:
            return "calibration runs on one GPU: set GPUs to 1"
        return None

    def action_calibrate(self) -> None:
        """C: ask how many candidates and steps (K and N, the last answer kept), then calibrate."""
        problem = self.calibrate_problem()
        if problem:
            self.notify(f"✖ not calibrated: {problem}", severity="error")
            return

        def answered(got: tuple[int, int] | None) -> None:
            if got is not None:
                self.calibrate_candidates, self.calibrate_steps = got
                self._start_calibration()

        self.app.push_screen(CalibrateDialog(self.calibrate_candidates, self.calibrate_steps, self.calibrate_warmup),
                             answered)

    def _start_calibration(self) -> None:
        problem = self.calibrate_problem()  # the form may have changed while the dialog was open
        if problem:
            self.notify(f"✖ not calibrated: {problem}", severity="error")
            return
        self._stop_calibration = stop = threading.Event()
        self.query_one(CalibrationBar).started(self.calibrate_candidates, self.calibrate_steps)
        self.query_one("#plan-calibrate", Button).label = "Stop"
        self.refresh_bindings()
        self.start_job("calibrate", train.calibrate_plan, self.app.workspace, self.config.model_copy(), self.document,
                       base_dir=self.base_dir, gpus=1, seq_len=self._int("#plan-seq", None),
                       candidates=self.calibrate_candidates, steps=self.calibrate_steps, warmup=self.calibrate_warmup,
                       options=self.calibrate_options, should_stop=stop.is_set, progress=True,
                       done=self._calibrated, failed=self._calibration_failed)

    def action_stop_calibration(self) -> None:
        if not self.calibrating:
            self.notify("Nothing is calibrating.", severity="warning")
            return

        def answered(ok: bool | None) -> None:
            if ok and self._stop_calibration is not None:
                self._stop_calibration.set()
                self.query_one(CalibrationBar).stopping()

        self.app.push_screen(ConfirmAction("Stop the calibration?", "The candidate running now is stopped; what was "
                                           "measured so far is kept.", "Stop"), answered)

    def _calibration_ended(self) -> None:
        self._stop_calibration = None
        self.query_one("#plan-calibrate", Button).label = "Calibrate"
        self.refresh_bindings()

    def _calibrated(self, cal) -> None:
        self._calibration_ended()
        self.query_one(CalibrationBar).finished(cal)
        self._schedule()  # re-plan: the saved calibration now gives measured and calibrated numbers

    def _calibration_failed(self, text: str) -> None:
        self._calibration_ended()
        self.query_one(CalibrationBar).failed(text)

    def on_unmount(self) -> None:
        # Quitting waits for thread workers: tell the calibration to stop its run rather than finish it.
        if self._stop_calibration is not None:
            self._stop_calibration.set()
