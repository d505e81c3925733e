"""Step 1, the Doctor: a checklist (symbol + word per status), details of the selected check, re-run, copy.

Layout and event wiring only: probing, parsing and checking are ``hipwizard.doctor.report.diagnose``, run
in a thread worker so the first frame ("probing...") never waits. The runner comes from, in order: the
screen's argument, ``app.doctor_runner`` (tests, snapshots), a ``replay_dir`` in the doctor's workspace
state, else the real tools.
"""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from hipwizard.doctor.models import DoctorReport
from hipwizard.doctor.state import demo_note, replay_dir, save_report

REPORT_FILE = "doctor-report.txt"  # in the workspace's .hipwizard/ folder


class DoctorScreen(Screen):
    step_key = "doctor"
    CSS_PATH = "doctor.tcss"
    HELP_TITLE = "Doctor"
    HELP_TEXT = (
        "Each line is one check of this machine for an MI300X fine-tune: ✔ ok, ⚠ warn, ✖ fail, – n/a "
        "(not applicable, with the reason). Select a line to read what was found, why it matters and the fix.\n\n"
        "Headless: hipwizard doctor [--json]. For a support ticket: hipwizard doctor --record DIR saves every "
        "tool output; hipwizard doctor --replay DIR shows what that machine sees."
    )
    BINDINGS = [
        Binding("r", "rerun", "Re-run checks", id="doctor.rerun"),
        Binding("c", "copy_report", "Copy report", id="doctor.copy"),
        Binding("j", "cursor('down')", "Down", show=False, id="doctor.down"),
        Binding("k", "cursor('up')", "Up", show=False, id="doctor.up"),
    ]

    class Progress(Message):
        """One probe answered (sent from the worker thread)."""

        def __init__(self, name: str, done: int, total: int) -> None:
            super().__init__()
            self.name, self.done, self.total = name, done, total

    class Diagnosed(Message):
        """The worker finished: the report, or why it could not be made."""

        def __init__(self, report: DoctorReport | None, error: str = "") -> None:
            super().__init__()
            self.report, self.error = report, error

    def __init__(self, runner=None) -> None:
        super().__init__()
        self._runner = runner
        self.report: DoctorReport | None = None
        self.running = False

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="doctor"):
            yield Static("○ probing...", id="doctor-summary")
            yield Static("", id="doctor-note")
            with Horizontal(id="doctor-body"):
                yield OptionList(id="doctor-checks")
                with VerticalScroll(id="doctor-detail-box"):
                    yield Static("○ probing the GPU, ROCm, driver and Python stack...", id="doctor-detail")
        yield Footer()

    def on_mount(self) -> None:
        note = demo_note(self.app.workspace)
        self.query_one("#doctor-note", Static).update(escape(note))
        self.query_one("#doctor-note", Static).display = bool(note)
        self.action_rerun()

    # --- probing ------------------------------------------------------------------------------
    def _make_runner(self):
        if self._runner is not None:
            return self._runner, "live"
        runner = getattr(self.app, "doctor_runner", None)
        if runner is not None:
            directory = getattr(runner, "directory", None)
            return runner, (f"replay of {Path(directory).name}" if directory else "live")
        replay = replay_dir(self.app.workspace)
        if replay and Path(replay).is_dir():
            from hipwizard.doctor.replay import ReplayRunner

            return ReplayRunner(replay), f"replay of {Path(replay).name}"
        from hipwizard.runner import SubprocessRunner

        return SubprocessRunner(), "live"

    def action_rerun(self) -> None:
        if self.running:
            self.notify("The doctor is already probing.", severity="warning")
            return
        self.running = True
        self.query_one("#doctor-summary", Static).update("○ probing... (0 tools answered)")
        self._diagnose()

    @work(exclusive=True, group="doctor")
    async def _diagnose(self) -> None:
        """Probe in a daemon thread and await it: leaving the screen or quitting never waits for a slow tool."""
        import asyncio
        import threading

        from hipwizard.doctor.probes import default_probes
        from hipwizard.doctor.report import diagnose

        total = len(default_probes())
        done: list[str] = []
        loop = asyncio.get_running_loop()
        answer: asyncio.Future = loop.create_future()

        def on_probe(name, _result) -> None:
            done.append(name)
            self.post_message(self.Progress(name, len(done), total))

        def probe_all() -> None:
            try:
                runner, origin = self._make_runner()
                result = (diagnose(runner, origin=origin, on_probe=on_probe), "")
            except Exception as exc:  # the thread must always report back
                result = (None, f"{type(exc).__name__}: {exc}")
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(result))

        threading.Thread(target=probe_all, daemon=True, name="doctor probes").start()
        report, error = await answer
        self.post_message(self.Diagnosed(report, error))

    def on_doctor_screen_progress(self, message: Progress) -> None:
        if self.running:
            self.query_one("#doctor-summary", Static).update(
                f"○ probing... ({message.done} of {message.total} tools answered, last: {escape(message.name)})")

    def on_doctor_screen_diagnosed(self, message: Diagnosed) -> None:
        self.running = False
        if message.report is None:
            self.query_one("#doctor-summary", Static).update(f"✖ the doctor could not finish: {escape(message.error)}")
            return
        self.report = report = message.report
        try:
            save_report(self.app.workspace, report)
        except OSError as exc:
            self.notify(f"report not saved: {exc}", severity="warning")
        verdict = "✖ not ready" if report.failed else "✔ no check fails"
        self.query_one("#doctor-summary", Static).update(
            f"[b]{verdict}[/b] — {report.summary()}  ·  {escape(report.origin)}  ·  r re-run, c copy")
        checks = self.query_one("#doctor-checks", OptionList)
        highlighted = checks.highlighted
        checks.clear_options()
        checks.add_options([Option(f"{c.symbol} {c.status:<4} {escape(c.title)}", id=c.id) for c in report.checks])
        first_problem = next((i for i, c in enumerate(report.checks) if c.status == "fail"), 0)
        checks.highlighted = highlighted if highlighted is not None else first_problem
        checks.focus()
        self._show_detail(checks.highlighted or 0)

    # --- details ------------------------------------------------------------------------------
    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_detail(event.option_index)

    def _show_detail(self, index: int) -> None:
        if self.report is None or not self.report.checks:
            return
        c = self.report.checks[max(0, min(index, len(self.report.checks) - 1))]
        parts = [
            f"[b]{escape(c.title)}[/b]   {c.symbol} {c.status}",
            "",
            f"[b]Found[/b]\n{escape(c.found)}",
            "",
            f"[b]Why it matters[/b]\n{escape(c.why)}",
        ]
        if c.fix:
            parts += ["", f"[b]Fix[/b]\n{escape(c.fix)}"]
        self.query_one("#doctor-detail", Static).update("\n".join(parts))

    def action_cursor(self, direction: str) -> None:
        checks = self.query_one("#doctor-checks", OptionList)
        checks.action_cursor_down() if direction == "down" else checks.action_cursor_up()

    # --- copy ---------------------------------------------------------------------------------
    def action_copy_report(self) -> None:
        if self.report is None:
            self.notify("Nothing to copy yet: the doctor is still probing.", severity="warning")
            return
        from hipwizard.atomic import atomic_write_text
        from hipwizard.doctor.report import render_text

        text = render_text(self.report)
        self.app.copy_to_clipboard(text)
        ws = self.app.workspace
        target = ws.state_dir / REPORT_FILE
        try:
            atomic_write_text(target, text)
        except OSError as exc:
            self.notify(f"Copied to the clipboard; not saved: {exc}", severity="warning")
            return
        self.notify(f"Report copied to the clipboard and saved to {target.relative_to(ws.root)}")


