"""The Run tab: pick a run, launch it, watch it live, stop it — none of it blocks the UI.

Listing, launching and stopping are jobs (``tui.workers.Jobs``) calling the train step's services, the
same functions the CLI calls. A thread worker follows the attached run (``train.follow``): it polls the logs,
samples GPU and host, and posts a ``RunUpdated`` snapshot, which coalesces (a pending older one is dropped),
so a log that grows by thousands of lines a second yields at most one redraw per poll. Launch and stop ask
to confirm. Quitting the app only stops watching. Below ``NARROW`` columns the panels stack and scroll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Label, OptionList, RichLog, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState, get_current_worker

from hipwizard import train
from hipwizard.errors import UserError
from hipwizard.train import STATE_SYMBOL, HostSample, Launched, RunInfo, host_sample
from hipwizard.tui.follow_log import FollowLog
from hipwizard.tui.messages import RunUpdated, WorkProgress
from hipwizard.tui.postmortem import run_postmortem
from hipwizard.tui.train import run_panels
from hipwizard.tui.train.dialogs import ConfirmAction
from hipwizard.tui.train.loss_plot import SeriesPlot
from hipwizard.tui.train.run_longrun import LongRunActions
from hipwizard.tui.workers import Jobs, one_line
from hipwizard.workspace import Workspace

if TYPE_CHECKING:
    from textual import getters

    from hipwizard.tui.app_base import WorkspaceApp

__all__ = ["RunUpdated", "RunView"]

NARROW = 120  # columns below which the GPU panel and the log stack under the plots


class RunView(LongRunActions, Jobs, Vertical):
    """Runs of the workspace on the left; the attached run's live panels on the right."""

    if TYPE_CHECKING:
        app = getters.app(WorkspaceApp)  # typed for the checker; at run time Textual's own property

    def __init__(self, workspace: Workspace, *, telemetry=None,
                 host_probe: Callable[[], HostSample] | None = host_sample, poll_s: float = 1.0,
                 extra_roots: tuple[Path, ...] = (), id: str | None = "run-view") -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self.telemetry = telemetry
        self.host_probe = host_probe
        self.poll_s = poll_s
        self.extra_roots = extra_roots
        self.runs: list[RunInfo] = []
        self.attached: str | None = None
        self.snap = None
        self.stopping = False
        self.launching = False
        self._generation = 0
        self._lines_shown: tuple = ()
        self._pending_select: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="run-list-pane"):
                yield Label("Runs", classes="pane-title")
                yield OptionList(id="run-list")
            with VerticalScroll(id="run-main"):
                yield Static("", id="run-job")
                yield Static("○ no run attached — pick one on the left (enter), D: demo run, x: launch",
                             id="run-status")
                yield Static("", id="run-progress")
                yield Static("", id="run-rates")
                yield Static("", id="run-failure")
                with Horizontal(id="run-plots"):
                    yield SeriesPlot("loss", id="plot-loss")
                    yield SeriesPlot("learning rate", yfmt="{:.1e}", id="plot-lr")
                with Horizontal(id="run-bottom"):
                    yield Static("", id="run-gpu")
                    yield FollowLog(id="run-log", max_lines=400, wrap=False, markup=False)

    def on_mount(self) -> None:
        self.query_one("#run-failure").display = False
        self.query_one("#run-job").display = False
        self.action_refresh()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    # --- run list -----------------------------------------------------------------------------
    def action_refresh(self) -> None:
        self.start_job("list-runs", train.list_runs, self.workspace, self.extra_roots, planned=True,
                       done=self._show_runs)

    def _show_runs(self, runs: list[RunInfo]) -> None:
        self.runs = runs
        ol = self.query_one("#run-list", OptionList)
        highlighted = self._pending_select or (ol.highlighted_option.id if ol.highlighted_option else self.attached)
        self._pending_select = None
        ol.clear_options()
        for r in self.runs:
            ol.add_option(Option(f"{STATE_SYMBOL[r.state]} {r.name}\n  {r.state}", id=r.run_dir))
        ids = [r.run_dir for r in self.runs]
        if highlighted in ids:
            ol.highlighted = ids.index(highlighted)
        elif ids:
            ol.highlighted = 0

    def select(self, run_dir: str | Path) -> None:
        """Highlight a run in the list (refreshing it first)."""
        self._pending_select = str(Path(run_dir).resolve())
        self.action_refresh()

    def _selected(self) -> str | None:
        ol = self.query_one("#run-list", OptionList)
        return ol.highlighted_option.id if ol.highlighted_option else None

    def action_next(self) -> None:
        self.query_one("#run-list", OptionList).action_cursor_down()

    def action_previous(self) -> None:
        self.query_one("#run-list", OptionList).action_cursor_up()

    def _info(self, run_dir: str | None) -> RunInfo | None:
        return next((r for r in self.runs if r.run_dir == run_dir), None)

    @on(OptionList.OptionSelected, "#run-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:  # every row of the run list has its run folder as id
            self.attach(event.option.id)

    def action_attach(self) -> None:
        run_dir = self._selected()
        if run_dir:
            self.attach(run_dir)
        else:
            self.notify("no run to attach to: launch one (x) or start the demo (D)", severity="warning")

    # --- watching -------------------------------------------------------------------------------
    def attach(self, run_dir: str, *, launched: bool = False) -> None:
        """Follow ``run_dir``: load its whole history, then live updates (``launched``: just now, so the
        list, not yet refreshed, may still call it "not launched")."""
        info = self._info(run_dir)
        if not launched and info is not None and info.state == "not launched":
            self.notify(f"{info.name} was not launched yet: press x to launch it", severity="warning")
            return
        self.attached = run_dir
        self._generation += 1
        self._lines_shown = ()
        self.query_one("#run-log", RichLog).clear()
        self._watch(run_dir, self._generation)

    @work(thread=True, exclusive=True, group="run-watch", exit_on_error=False)
    def _watch(self, run_dir: str, generation: int) -> None:
        """A stream, not a job: it posts a snapshot whenever something moved, until the run ends."""
        worker = get_current_worker()
        try:
            run = train.follow(run_dir, self.workspace)
        except UserError as exc:
            self.notify(str(exc), severity="error")  # notify is thread-safe
            return
        next_gpu, changed, last_state = 0.0, True, None
        while not worker.is_cancelled:
            state = run.state()
            sampled = False
            if self.telemetry is not None and time.monotonic() >= next_gpu:
                run.add_reading(self.telemetry.sample())
                next_gpu, sampled = time.monotonic() + 1.0, True
            # Post only when something moved: an idle run costs no redraw.
            if changed or sampled or state != last_state:
                host = self.host_probe() if self.host_probe else None
                self.post_message(RunUpdated(run.snapshot(state, host=host), generation))
            last_state = state
            if state not in train.LIVE_STATES:  # a stalled run is alive: steps may come again
                return
            deadline = time.monotonic() + self.poll_s
            while time.monotonic() < deadline and not worker.is_cancelled:
                time.sleep(min(0.05, self.poll_s))
            changed = run.poll().changed

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Jobs' own handler runs too (Textual calls the handler of each class): this one only speaks for
        # the watch stream, which is not a job.
        if event.worker.group == "run-watch" and event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(f"✖ stopped following the run: {one_line(event.worker.error)}", severity="error")

    @on(RunUpdated)
    def _show(self, message: RunUpdated) -> None:
        if message.generation != self._generation:
            return  # a snapshot of the run we attached before
        had_alarm = self.has_alarm
        before = self.snap.state if self.snap is not None else None
        snap = self.snap = message.snap
        self.stall_alarm(before, snap.state)
        if self.has_alarm != had_alarm or snap.state != before:
            self.screen.refresh_bindings()  # P shows in the footer only with an alarm, R only on an ended run
        narrow = self.has_class("-narrow")
        state = "stopping" if self.stopping and snap.state == "running" else snap.state
        self.query_one("#run-status", Static).update(run_panels.status_text(snap, state))
        self.query_one("#run-progress", Static).update(run_panels.progress_text(snap, bar_width=12 if narrow else 24))
        self.query_one("#run-rates", Static).update(run_panels.rates_text(snap))
        failure = run_panels.failure_text(snap)
        box = self.query_one("#run-failure", Static)
        relaid = box.display != (failure is not None)  # the log below gets another height
        box.display = failure is not None
        if failure is not None:
            box.update(failure)
        series = {"loss": snap.loss, "smoothed": snap.loss_smooth}
        if snap.eval_loss:
            series["eval loss"] = snap.eval_loss
        self.query_one("#plot-loss", SeriesPlot).set_series(series)
        self.query_one("#plot-lr", SeriesPlot).set_series({"lr": snap.lr})
        self.query_one("#run-plots").set_class(not snap.loss and not snap.lr, "-empty")  # narrow: 2 lines
        self.query_one("#run-gpu", Static).update(run_panels.gpu_text(snap))
        log = self.query_one("#run-log", RichLog)
        if snap.lines != self._lines_shown:
            log.clear()
            for line in snap.lines:
                log.write(run_panels.log_line_text(line.text, line.level))
            self._lines_shown = snap.lines
            relaid = True
        if relaid:  # keep the newest line in view once the new layout is known
            self.call_after_refresh(log.scroll_end, animate=False)
        info = self._info(self.attached)
        if info is not None and info.state != snap.state:
            self.action_refresh()

    # --- launch / stop ----------------------------------------------------------------------------
    def action_launch(self) -> None:
        """x: launch the highlighted run directory, after a confirmation."""
        run_dir = self._selected()
        if not run_dir:
            self.notify("no run directory selected: save one in the Plan tab, or press D for the demo",
                        severity="warning")
            return
        self.confirm_launch(run_dir)

    def confirm_launch(self, run_dir: str | Path) -> None:
        info = self._info(str(run_dir))
        if info is not None and info.state in train.LIVE_STATES:
            self.notify(f"{info.name} is already running: attach (o) or stop it (X) first", severity="warning")
            return
        name = info.name if info is not None else Path(run_dir).name
        again = info is not None and info.state != "not launched"
        question = f"Launch {name}{' again' if again else ''}?"
        detail = "llamafactory-cli train runs detached: quitting hipwizard does not stop it."
        self.app.push_screen(ConfirmAction(question, detail, "Launch"),
                             lambda ok: self.launch(run_dir) if ok else None)

    def launch(self, run_dir: str | Path) -> None:
        """Launch without asking (the caller asked)."""
        if self._busy():
            return
        self.start_job("launch", train.launch, self.workspace, run_dir, done=self._launched,
                       failed=self._launch_failed, progress=True)

    def action_demo(self) -> None:
        """D: build the demo model (once) and launch the demo preset's short LoRA run on CPU."""
        if self._busy():
            return
        self.notify("building the demo model and launching a short LoRA run on CPU …")
        self.start_job("launch", train.launch_demo, self.workspace, done=self._launched,
                       failed=self._launch_failed, progress=True)

    def _busy(self) -> bool:
        if self.launching:
            self.notify("a launch is under way: wait for it", severity="warning")
            return True
        self.launching = True
        return False

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.job != "launch":
            return
        message.stop()
        job = self.query_one("#run-job", Static)
        job.display = not message.progress.finished
        job.update(f"◌ {message.progress.text()} …")

    def _job_over(self) -> None:
        self.launching = False
        self.query_one("#run-job").display = False

    def _launch_failed(self, text: str) -> None:
        self._job_over()
        self.notify(f"✖ cannot launch: {text}", severity="error", timeout=8)

    def _launched(self, launched: Launched) -> None:
        self._job_over()
        self.notify(f"◐ launched {launched.name}")
        for warning in launched.warnings:
            self.notify(f"⚠ {warning}", severity="warning")
        self.select(launched.run_dir)
        self.attach(launched.run_dir, launched=True)

    def action_stop(self) -> None:
        """X: stop the attached run, after a confirmation."""
        if not self.attached or self.snap is None or self.snap.state not in train.LIVE_STATES:
            self.notify("the attached run is not running", severity="warning")
            return
        run_dir = self.attached
        self.app.push_screen(
            ConfirmAction(f"Stop {self.snap.name}?", "The Trainer saves first, then the whole process group "
                                                     "is ended.", "Stop"),
            lambda ok: self.stop(run_dir) if ok else None)

    def stop(self, run_dir: str) -> None:
        """Stop without asking (the caller asked)."""
        self.stopping = True
        if self.snap is not None and run_dir == self.attached:
            self.query_one("#run-status", Static).update(run_panels.status_text(self.snap, "stopping"))
        self.notify("◌ stopping: asking the Trainer to save and stop …")
        self.start_job("stop", train.stop, run_dir, done=self._stopped, failed=self._stop_failed)

    def _stop_failed(self, text: str) -> None:
        self.stopping = False
        self.notify(f"✖ cannot stop: {text}", severity="error", timeout=8)

    def _stopped(self, result) -> None:
        self.stopping = False
        if result.survivors:
            self.notify(f"✖ still alive after stop: {result.survivors}", severity="error")
        else:
            self.notify("■ stopped; no process of the run is left")
        self.action_refresh()

    # --- post-mortem of an alarm ----------------------------------------------------------------------
    @property
    def has_alarm(self) -> bool:
        """The attached run has a NaN/inf loss or a grad_norm spike: what P looks into."""
        return self.snap is not None and any(line.startswith("✖") or "grad_norm" in line for line in self.snap.alarms)

    def action_postmortem(self) -> None:
        """P: rebuild the batch of the attached run's first NaN/inf or grad_norm spike and compare the model on
        it (``hipwizard parity postmortem``, in a subprocess); then open Parity on the result."""
        if not self.attached or self.snap is None:
            self.notify("attach a run first (enter or o)", severity="warning")
            return
        if not self.has_alarm:
            self.notify("no NaN/inf loss or grad_norm spike on this run; for any step: "
                        "hipwizard parity postmortem RUN_DIR --step N", severity="warning", timeout=8)
            return
        self.notify("◌ post-mortem: rebuilding the alarm step's batch and comparing the model on it …", timeout=8)
        self.start_job("postmortem", run_postmortem, self.workspace, self.attached, done=self._postmortem_done,
                       failed=lambda text: self.notify(f"✖ post-mortem: {text}", severity="error", timeout=10))

    def _postmortem_done(self, result: dict) -> None:
        meta = result.get("batch_meta", {})
        weights = f" ({meta['weights']})" if meta.get("weights") else ""
        self.notify(f"✔ step {meta.get('step')}'s batch compared{weights}: {result['comparison'].get('headline', '')}",
                    timeout=10)
        self.app.action_open_step("parity")

