"""The wizard's home: the four steps with their status, and the suggested next step."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from hipwizard.steps import STEPS, Step


class StepCard(Static, can_focus=True):
    """One step: number, title, state (symbol and word) and one-line summary. Click or Enter opens it."""

    BINDINGS = [Binding("enter", "open", "Open step", show=False)]

    class Chosen(Message):
        def __init__(self, spec: Step) -> None:
            super().__init__()
            self.spec = spec

    def __init__(self, spec: Step) -> None:
        super().__init__(id=f"step-{spec.key}", classes="step-card")
        self.spec = spec

    def show(self, symbol: str, state: str, summary: str, suggested: bool) -> None:
        spec = self.spec
        self.set_class(suggested, "suggested")
        self.set_class(state == "done", "done")
        self.set_class(state == "attention", "attention")
        hint = "   ➜ next" if suggested else ""
        self.update(
            f"[b]{spec.number}  {spec.title}[/b]   {symbol} {state}{hint}\n"
            f"{summary}\n[dim]{spec.blurb}[/dim]"
        )

    def on_click(self) -> None:
        self.post_message(self.Chosen(self.spec))

    def action_open(self) -> None:
        self.post_message(self.Chosen(self.spec))


class HomeScreen(Screen):
    BINDINGS = [
        Binding("g", "open_next", "Next step", id="home.next"),
        Binding("down,j", "app.focus_next", "Down", show=False),
        Binding("up,k", "app.focus_previous", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="home"):
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

    @work(thread=True, exclusive=True, group="home-status")
    def refresh_status(self) -> None:
        """Each step's status, read off the UI thread: the first frame never waits for the workspace."""
        ws = self.app.workspace
        demo = bool(ws.read_state("workspace").get("demo"))
        statuses = {s.key: ws.step_status(s.key) for s in STEPS}
        self.app.call_from_thread(self._show_status, statuses, demo)

    def _show_status(self, statuses, demo: bool) -> None:
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

    def on_step_card_chosen(self, message: StepCard.Chosen) -> None:
        self.app.action_open_step(message.spec.key)
