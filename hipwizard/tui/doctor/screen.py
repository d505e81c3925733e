"""Step 1, the Doctor: a checklist (symbol + word per status), details of the selected check, re-run, copy.

Layout and event wiring only: probing, checking and saving are ``hipwizard.doctor.diagnose``, run as
a daemon job (``Jobs.start_job(daemon=True)``), so the first frame ("probing...") never waits and leaving the
screen or quitting never waits for a slow tool. The answers come from, in order: the screen's runner argument,
``app.doctor_runner`` (tests, snapshots), else ``workspace_source`` (a recording the workspace
names, else the real tools).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from hipwizard.doctor import Diagnosis, DoctorReport, Source, demo_note, diagnose, diagnose_paste, export_report
from hipwizard.textsafe import markup as escape  # text from outside: inert, markup shown as text
from hipwizard.tui.messages import WorkProgress
from hipwizard.tui.step_screen import StepScreen, when_idle

PROBING = "the doctor is probing"  # what ``busy`` says while a diagnosis runs ("Wait: the doctor is probing")


class DoctorScreen(StepScreen):
    step_key = "doctor"
    CSS_PATH = "doctor.tcss"
    help_title = "Doctor"
    help_text = (
        "Each line is one check of this machine for an MI300X fine-tune: ✔ ok, ⚠ warn, ✖ fail, – n/a "
        "(not applicable, with the reason). Select a line to read what was found, why it matters and the fix.\n\n"
        "Headless: hipwizard doctor [--json]. For a support ticket: hipwizard doctor --record DIR saves every "
        "tool output; hipwizard doctor --replay DIR shows what that machine sees. p pastes tool outputs (a "
        "terminal log from another machine): they are recognised, saved as a recording and checked; "
        "? unknown means the paste or recording did not include that check's inputs."
    )
    # Narrow terminals (80 columns): a narrower checklist leaves the details room to read.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    BINDINGS = [
        Binding("r", "rerun", "Re-run checks", id="doctor.rerun"),
        Binding("c", "copy_report", "Copy report", id="doctor.copy"),
        Binding("p", "paste", "Paste outputs", id="doctor.paste"),
        Binding("j", "cursor('down')", "Down", show=False, id="doctor.down"),
        Binding("k", "cursor('up')", "Up", show=False, id="doctor.up"),
    ]

    def __init__(self, runner=None) -> None:
        super().__init__()
        self._runner = runner
        self.report: DoctorReport | None = None

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
    def _source(self) -> Source | None:
        """A runner given to the screen or the app (tests, snapshots); None: the service decides."""
        runner = self._runner if self._runner is not None else getattr(self.app, "doctor_runner", None)
        return None if runner is None else Source.of(runner)

    @when_idle
    def action_rerun(self) -> None:
        self.busy = PROBING
        self.query_one("#doctor-summary", Static).update("○ probing... (0 tools answered)")
        self.start_job("diagnose", diagnose, self.app.workspace, self._source(), progress=True,
                       daemon=True, done=self._diagnosed, failed=self._failed)

    def on_work_progress(self, message: WorkProgress) -> None:
        p = message.progress
        if self.busy and message.job == "diagnose":
            self.query_one("#doctor-summary", Static).update(
                f"○ probing... ({p.done} of {p.total} tools answered, last: {escape(p.item)})")

    def _failed(self, error: str) -> None:
        self.busy = ""
        self.query_one("#doctor-summary", Static).update(f"✖ the doctor could not finish: {escape(error)}")

    def _diagnosed(self, result: Diagnosis) -> None:
        self.busy = ""
        self.report = report = result.report
        if result.save_error:
            self.notify(f"report not saved: {escape(result.save_error)}", severity="warning")
        verdict = "✖ not ready" if report.failed else "✔ no check fails"
        self.query_one("#doctor-summary", Static).update(
            f"[b]{verdict}[/b] — {report.summary()}  ·  {escape(report.origin)}")
        checks = self.query_one("#doctor-checks", OptionList)
        highlighted = checks.highlighted
        checks.clear_options()
        checks.add_options([Option(f"{c.symbol} {c.status:<4} {escape(c.title)}", id=c.id) for c in report.checks])
        first_problem = next((i for i, c in enumerate(report.checks) if c.status == "fail"), 0)
        checks.highlighted = highlighted if highlighted is not None else first_problem
        checks.focus()
        self._show_detail(checks.highlighted or 0)

    # --- paste --------------------------------------------------------------------------------
    @when_idle
    def action_paste(self) -> None:
        from hipwizard.tui.doctor.paste_box import PasteBox

        self.app.push_screen(PasteBox(), self._pasted)

    def _pasted(self, text: str | None) -> None:
        if not text:
            return
        self.busy = PROBING
        self.query_one("#doctor-summary", Static).update("○ checking the pasted outputs...")
        self.start_job("diagnose", diagnose_paste, self.app.workspace, text, daemon=True,
                       done=self._diagnosed, failed=self._failed)

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
        ws = self.app.workspace
        exported = export_report(ws, self.report)
        self.app.copy_to_clipboard(exported.text)
        if exported.error:
            self.notify(f"Copied to the clipboard; not saved: {escape(exported.error)}", severity="warning")
            return
        self.notify(f"Report copied to the clipboard and saved to {escape(exported.path.relative_to(ws.root))}")
