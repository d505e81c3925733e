"""The Run tab: pick a run, launch it, watch it live, stop it — none of it blocks the UI.

A thread worker follows the attached run (``RunWatch``): it polls the logs, samples GPU and host,
and posts a ``RunUpdated`` snapshot. ``RunUpdated.can_replace`` drops a pending older snapshot, so a
log that grows by thousands of lines a second yields at most one redraw per poll (toolong-style
coalescing). Launch and stop also run in workers. Quitting the app only stops watching.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, OptionList, RichLog, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from hipwizard.errors import UserError
from hipwizard.train.runs import STATE_SYMBOL, RunInfo
from hipwizard.train.snapshot import GpuHistory, HostSample, RunSnapshot, host_sample, snapshot
from hipwizard.tui.train import run_panels
from hipwizard.tui.train.loss_plot import SeriesPlot


class RunUpdated(Message):
    """A new picture of the attached run; a pending older one is dropped (coalescing)."""

    def __init__(self, snap: RunSnapshot, generation: int) -> None:
        super().__init__()
        self.snap, self.generation = snap, generation

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunUpdated)


class RunsListed(Message):
    def __init__(self, runs: list[RunInfo]) -> None:
        super().__init__()
        self.runs = runs


class RunView(Vertical):
    """Runs of the workspace on the left; the attached run's live panels on the right."""

    def __init__(self, runs_dir: Path, *, telemetry=None, host_probe: Callable[[], HostSample] | None = host_sample,
                 poll_s: float = 1.0, extra_roots: tuple[Path, ...] = (), id: str | None = "run-view") -> None:
        super().__init__(id=id)
        self.runs_dir = runs_dir
        self.telemetry = telemetry
        self.host_probe = host_probe
        self.poll_s = poll_s
        self.extra_roots = extra_roots
        self.runs: list[RunInfo] = []
        self.attached: str | None = None
        self.snap: RunSnapshot | None = None
        self.stopping = False
        self._generation = 0
        self._lines_shown: tuple = ()
        self._pending_select: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="run-list-pane"):
                yield Label("Runs", classes="pane-title")
                yield OptionList(id="run-list")
            with Vertical(id="run-main"):
                yield Static("○ no run attached — pick one on the left (enter), d: demo run, l: launch",
                             id="run-status")
                yield Static("", id="run-progress")
                yield Static("", id="run-rates")
                yield Static("", id="run-failure")
                with Horizontal(id="run-plots"):
                    yield SeriesPlot("loss", id="plot-loss")
                    yield SeriesPlot("learning rate", yfmt="{:.1e}", id="plot-lr")
                with Horizontal(id="run-bottom"):
                    yield Static("", id="run-gpu")
                    yield RichLog(id="run-log", max_lines=400, wrap=False, markup=False)

    def on_mount(self) -> None:
        self.query_one("#run-failure").display = False
        self.action_refresh()

    # --- run list -----------------------------------------------------------------------------
    def action_refresh(self) -> None:
        self._list_runs()

    @work(thread=True, exclusive=True, group="run-list")
    def _list_runs(self) -> None:
        from hipwizard.train.runs import list_runs, run_info

        runs = list_runs([self.runs_dir, *self.extra_roots])
        known = {r.run_dir for r in runs}
        # Run directories the Plan tab saved but nobody launched yet.
        if self.runs_dir.is_dir():
            for cfg in sorted(self.runs_dir.glob("*/config.yaml")):
                if str(cfg.parent.resolve()) not in known:
                    runs.append(run_info(cfg.parent))
        self.post_message(RunsListed(runs))

    @on(RunsListed)
    def _show_runs(self, message: RunsListed) -> None:
        self.runs = message.runs
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

    def select(self, run_dir: str) -> None:
        """Highlight a run in the list (refreshing it first)."""
        self._pending_select = str(Path(run_dir).resolve())
        self.action_refresh()

    def _selected(self) -> str | None:
        ol = self.query_one("#run-list", OptionList)
        return ol.highlighted_option.id if ol.highlighted_option else None

    @on(OptionList.OptionSelected, "#run-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.attach(event.option.id)

    def action_attach(self) -> None:
        run_dir = self._selected()
        if run_dir:
            self.attach(run_dir)

    # --- watching -------------------------------------------------------------------------------
    def attach(self, run_dir: str) -> None:
        """Follow ``run_dir``: load its whole history, then live updates."""
        info = next((r for r in self.runs if r.run_dir == run_dir), None)
        if info is not None and info.state == "not launched":
            self.notify(f"{info.name} was not launched yet: press l to launch it", severity="warning")
            return
        self.attached = run_dir
        self._generation += 1
        self._lines_shown = ()
        self.query_one("#run-log", RichLog).clear()
        self._watch(run_dir, self._generation)

    @work(thread=True, exclusive=True, group="run-watch")
    def _watch(self, run_dir: str, generation: int) -> None:
        from hipwizard.train.stop import run_processes
        from hipwizard.train.watch import RunWatch

        worker = get_current_worker()
        try:
            watch = RunWatch(run_dir)
        except UserError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        watch.attach()
        gpu_history, next_gpu, reading = GpuHistory(), 0.0, None
        changed, last_state = True, None
        while not worker.is_cancelled:
            state = watch.state()
            sampled = False
            if self.telemetry is not None and time.monotonic() >= next_gpu:
                reading = self.telemetry.sample()
                gpu_history.add(reading)
                next_gpu, sampled = time.monotonic() + 1.0, True
            # Post only when something moved: an idle run costs no redraw.
            if changed or sampled or state != last_state:
                pids = None
                if state == "running" and reading is not None and any(s.processes for s in reading.samples):
                    pids = set(run_processes(watch.manifest))
                host = self.host_probe() if self.host_probe else None
                self.post_message(RunUpdated(snapshot(watch, state, gpu=reading, gpu_history=gpu_history,
                                                      host=host, run_pids=pids), generation))
            last_state = state
            if state != "running":
                return
            deadline = time.monotonic() + self.poll_s
            while time.monotonic() < deadline and not worker.is_cancelled:
                time.sleep(min(0.05, self.poll_s))
            changed = watch.poll().changed

    @on(RunUpdated)
    def _show(self, message: RunUpdated) -> None:
        if message.generation != self._generation:
            return  # a snapshot of the run we attached before
        snap = self.snap = message.snap
        state = "stopping" if self.stopping and snap.state == "running" else snap.state
        self.query_one("#run-status", Static).update(run_panels.status_text(snap, state))
        self.query_one("#run-progress", Static).update(run_panels.progress_text(snap))
        self.query_one("#run-rates", Static).update(run_panels.rates_text(snap))
        failure = run_panels.failure_text(snap)
        box = self.query_one("#run-failure", Static)
        box.display = failure is not None
        if failure is not None:
            box.update(failure)
        series = {"loss": snap.loss, "smoothed": snap.loss_smooth}
        if snap.eval_loss:
            series["eval loss"] = snap.eval_loss
        self.query_one("#plot-loss", SeriesPlot).set_series(series)
        self.query_one("#plot-lr", SeriesPlot).set_series({"lr": snap.lr})
        self.query_one("#run-gpu", Static).update(run_panels.gpu_text(snap))
        if snap.lines != self._lines_shown:
            log = self.query_one("#run-log", RichLog)
            log.clear()
            for line in snap.lines:
                log.write(run_panels.log_line_text(line.text, line.level))
            self._lines_shown = snap.lines
        info = next((r for r in self.runs if r.run_dir == self.attached), None)
        if info is not None and info.state != snap.state:
            self.action_refresh()

    # --- launch / stop ----------------------------------------------------------------------------
    def action_launch(self) -> None:
        run_dir = self._selected()
        if not run_dir:
            self.notify("no run directory selected: save one in the Plan tab, or press d for the demo",
                        severity="warning")
            return
        self._launch(run_dir, demo=False)

    def action_demo(self) -> None:
        self.notify("building the demo model and launching a short LoRA run on CPU …")
        self._launch(None, demo=True)

    @work(thread=True, group="run-launch")
    def _launch(self, run_dir: str | None, demo: bool) -> None:
        from hipwizard.train.launcher import LaunchOptions, launch

        options = LaunchOptions()
        try:
            if demo:
                from hipwizard.train.demo_run import build_demo_assets, write_demo_run_dir

                run_dir = str(write_demo_run_dir(self.runs_dir, build_demo_assets()))
                options.extra_env.update(DISABLE_VERSION_CHECK="1", HF_HUB_OFFLINE="1")
                options.platform = "cpu"
            manifest = launch(run_dir, options)
        except (UserError, OSError) as exc:
            self.app.call_from_thread(self.notify, f"✖ cannot launch: {exc}", severity="error")
            return
        self.app.call_from_thread(self._launched, manifest.run_dir, manifest.name)

    def _launched(self, run_dir: str, name: str) -> None:
        self.notify(f"◐ launched {name}")
        try:
            from hipwizard.cli.train_run import remember_run

            remember_run(self.app.workspace, run_dir)
        except AttributeError:
            pass
        self.action_refresh()
        self.attach(run_dir)

    def action_stop(self) -> None:
        if not self.attached or self.snap is None or self.snap.state != "running":
            self.notify("the attached run is not running", severity="warning")
            return
        self.stopping = True
        self.notify("◌ stopping: asking the Trainer to save and stop …")
        self._stop(self.attached)

    @work(thread=True, group="run-stop")
    def _stop(self, run_dir: str) -> None:
        from hipwizard.train.manifest import load_manifest
        from hipwizard.train.stop import stop_run

        manifest = load_manifest(run_dir)
        result = stop_run(manifest) if manifest else None
        self.app.call_from_thread(self._stopped, result)

    def _stopped(self, result) -> None:
        self.stopping = False
        if result is not None and result.survivors:
            self.notify(f"✖ still alive after stop: {result.survivors}", severity="error")
        else:
            self.notify("■ stopped; no process of the run is left")
        self.action_refresh()
