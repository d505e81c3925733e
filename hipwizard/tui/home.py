"""The wizard's home: the four steps with their status, and the suggested next step.

Fits 80x24: below 34 rows each card drops its blurb and keeps its summary to one line (``-short``), and the
list scrolls rather than pushing the footer off when even that does not fit.
"""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from hipwizard.steps import STEPS, Step
from hipwizard.tui.workers import Jobs
from hipwizard.workspace import StepStatus, Workspace


class StepCard(Vertical, can_focus=True):
    """One step: number, title, state (symbol and word), one-line summary, blurb. Click or Enter opens it."""

    BINDINGS = [Binding("enter", "open", "Open step", show=False)]

    class Chosen(Message):
        def __init__(self, spec: Step) -> None:
            super().__init__()
            self.spec = spec

    def __init__(self, spec: Step) -> None:
        super().__init__(id=f"step-{spec.key}", classes="step-card")
        self.spec = spec

    def compose(self) -> ComposeResult:
        yield Static(classes="card-title")
        yield Static(classes="card-summary")
        yield Static(f"[dim]{self.spec.blurb}[/dim]", classes="card-blurb")

    def show(self, symbol: str, state: str, summary: str, suggested: bool) -> None:
        spec = self.spec
        self.set_class(suggested, "suggested")
        self.set_class(state == "done", "done")
        self.set_class(state == "attention", "attention")
        hint = "   ➜ next" if suggested else ""
        self.query_one(".card-title", Static).update(f"[b]{spec.number}  {spec.title}[/b]   {symbol} {state}{hint}")
        self.query_one(".card-summary", Static).update(escape(summary))

    @property
    def text(self) -> str:
        """What the card says, as plain text (title, summary, blurb)."""
        return "\n".join(str(w.render()) for w in self.query(Static))

    def on_click(self) -> None:
        self.post_message(self.Chosen(self.spec))

    def action_open(self) -> None:
        self.post_message(self.Chosen(self.spec))


class StepList(VerticalScroll, inherit_bindings=False, can_focus=False):
    """The cards, scrolling when the terminal is too short for them; the arrow keys stay the screen's (they
    move between cards, and the list follows the focus)."""


class HomeScreen(Jobs, Screen):
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [
        Binding("g", "open_next", "Next step", id="home.next"),
        Binding("down,j", "app.focus_next", "Down", show=False),
        Binding("up,k", "app.focus_previous", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with StepList(id="home"):
            yield Static(id="workspace-line")
            for spec in STEPS:
                yield StepCard(spec)
            yield Static(id="next-line")
        yield Footer()

    _next: Step | None = None

    def on_mount(self) -> None:
        ws = self.app.workspace
        self.query_one("#workspace-line", Static).update(f"Workspace [b]{ws.root}[/b]")
        for spec in STEPS:
            self.query_one(f"#step-{spec.key}", StepCard).show("…", "reading", "reading the workspace …", False)
        # After the first frame: the worker's imports would otherwise compete with it for the GIL. At start-up
        # this runs inside the app's start-up batch, where an after-refresh callback fires before anything
        # is drawn; the app's own queue resumes only once that batch is over, so ask from there.
        self.app.call_later(self.call_after_refresh, self._first_status_read)

    _painted = False

    def _first_status_read(self) -> None:
        self._painted = True
        self.refresh_status()

    def on_screen_resume(self) -> None:
        # The push's own resume comes before the first frame: on_mount's read covers it (started then,
        # the worker's imports delayed the first frame by ~100 ms; benchmarks/startup.py).
        if self._painted:
            self.refresh_status()

    def refresh_status(self) -> None:
        """Each step's status, read off the UI thread: the first frame never waits for the workspace."""
        self.start_job("status", read_statuses, self.app.workspace, done=self._show_status)

    def _show_status(self, found: tuple[dict[str, StepStatus], bool]) -> None:
        statuses, demo = found
        ws = self.app.workspace
        suffix = "  (embedded demo)" if demo else ""
        self.query_one("#workspace-line", Static).update(f"Workspace [b]{ws.root}[/b]{suffix}")
        nxt = next((s for s in STEPS if statuses[s.key].state != "done"), None)
        for spec in STEPS:
            st = statuses[spec.key]
            self.query_one(f"#step-{spec.key}", StepCard).show(
                st.symbol, st.state, st.summary, nxt is not None and spec.key == nxt.key
            )
        self.query_one("#next-line", Static).update(
            f"Suggested next: [b]{nxt.number} {nxt.title}[/b] — press [b]g[/b] or [b]{nxt.number}[/b]"
            if nxt else "Every step is done. ✔"
        )
        self._next = nxt

    def action_open_next(self) -> None:
        if self._next is not None:
            self.app.action_open_step(self._next.key)
        else:  # statuses not read yet, or every step done: the app reads them and says so
            self.app.action_next_step()

    def on_step_card_chosen(self, message: StepCard.Chosen) -> None:
        self.app.action_open_step(message.spec.key)


def read_statuses(ws: Workspace) -> tuple[dict[str, StepStatus], bool]:
    """(each step's status, whether this is the embedded demo workspace): what the cards show."""
    demo = bool(ws.read_state("workspace").get("demo"))
    return {s.key: ws.step_status(s.key) for s in STEPS}, demo
