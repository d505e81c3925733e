"""The wizard's home: the four steps with their status, and the suggested next step.

Fits 80x24: below 34 rows each card drops its blurb and keeps its summary to one line (``-short``), and the
list scrolls rather than pushing the footer off when even that does not fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Static

from hipwizard.steps import STEPS, Step
from hipwizard.textsafe import markup
from hipwizard.tui.workers import Jobs
from hipwizard.workspace import StepStatus, Workspace

if TYPE_CHECKING:
    from textual import getters

    from hipwizard.tui.app_base import WorkspaceApp


class StepCard(Widget, can_focus=True):
    """One step: number, title, state (symbol and word), one-line summary, blurb. Click or Enter opens it.
    One widget drawing its lines (not a container of three): the first frame styles every node, and start-up
    is measured against a minimal app (benchmarks/startup.py). On a short screen (``-short``) the blurb is
    left out and the summary kept to one line."""

    BINDINGS = [Binding("enter", "open", "Open step", show=False)]

    class Chosen(Message):
        def __init__(self, spec: Step) -> None:
            super().__init__()
            self.spec = spec

    def __init__(self, spec: Step) -> None:
        super().__init__(id=f"step-{spec.key}", classes="step-card")
        self.spec = spec
        self._title = f"[b]{spec.number}  {spec.title}[/b]"
        self._summary = ""

    def show(self, symbol: str, state: str, summary: str, suggested: bool) -> None:
        spec = self.spec
        self.set_class(suggested, "suggested")
        self.set_class(state == "done", "done")
        self.set_class(state == "attention", "attention")
        hint = "   ➜ next" if suggested else ""
        self._title = f"[b]{spec.number}  {spec.title}[/b]   {symbol} {state}{hint}"
        self._summary = markup(summary)  # from the workspace's state files: text from outside
        self.refresh(layout=True)

    @property
    def short(self) -> bool:
        return self.screen.has_class("-short")

    def render(self) -> Content:
        title = Content.from_markup(self._title)
        summary = Content.from_markup(self._summary)
        if self.short:
            return Content("\n").join([title, _one_line(summary, self.content_region.width or 1)])
        return Content("\n").join([title, summary, Content.from_markup(f"[dim]{markup(self.spec.blurb)}[/dim]")])

    @property
    def text(self) -> str:
        """What the card says, as plain text (title, summary and, when shown, the blurb)."""
        return self.render().plain

    def on_click(self) -> None:
        self.post_message(self.Chosen(self.spec))

    def action_open(self) -> None:
        self.post_message(self.Chosen(self.spec))


def _one_line(content: Content, width: int) -> Content:
    """The first line of ``content``, cut with … to ``width`` cells."""
    line = content.split("\n")[0] if "\n" in content.plain else content
    if line.cell_length <= width:
        return line
    return line.truncate(max(1, width - 1)).append("…")


class StepList(VerticalScroll, inherit_bindings=False, can_focus=False):
    """The cards, scrolling when the terminal is too short for them; the arrow keys stay the screen's (they
    move between cards, and the list follows the focus)."""


class HomeScreen(Jobs, Screen):
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    if TYPE_CHECKING:
        app = getters.app(WorkspaceApp)  # typed for the checker; at run time Textual's own property
    BINDINGS = [
        Binding("g", "open_next", "Next step", id="home.next"),
        Binding("E", "app.export_report", "Export report", id="home.export"),
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

    def on_resize(self) -> None:
        for card in self.query(StepCard):  # -short may have flipped: a card draws two or three lines
            card.refresh(layout=True)

    def on_mount(self) -> None:
        ws = self.app.workspace
        self.query_one("#workspace-line", Static).update(f"Workspace [b]{markup(ws.root)}[/b]")
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
        self.query_one("#workspace-line", Static).update(f"Workspace [b]{markup(ws.root)}[/b]{suffix}")
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
    demo = ws.is_demo
    return {s.key: ws.step_status(s.key) for s in STEPS}, demo
