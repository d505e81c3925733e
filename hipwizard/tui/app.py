"""The Textual app: a thin shell that routes between the home screen and the four step screens."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from hipwizard import __version__
from hipwizard.steps import STEP_KEYS, STEPS, step_by_key
from hipwizard.textsafe import inert, inert_line
from hipwizard.tui.app_base import WorkspaceApp
from hipwizard.tui.help_screen import HelpScreen, bindings_of
from hipwizard.tui.home import HomeScreen
from hipwizard.tui.keymap import load_keymap
from hipwizard.tui.keys import explain_bindings, explanation
from hipwizard.tui.step_screen import StepScreen, screen_title
from hipwizard.tui.workers import Jobs
from hipwizard.workspace import Workspace


class HipwizardApp(Jobs, WorkspaceApp):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live in other folders
    TITLE = "hipwizard"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("h", "home", "Home", id="app.home"),
        Binding("q", "quit", "Quit", id="app.quit"),
        # 1-4 open a step from any screen (ids keep the old home.* names so existing keymaps still apply).
        *(Binding(str(s.number), f"open_step('{s.key}')", f"Step {s.number}: {s.title}", show=False,
                  id=f"home.{s.key}") for s in STEPS),
        Binding("g", "next_step", "Next step", show=False, id="app.next_step"),
        *explain_bindings(),
    ]

    def __init__(self, workspace: Workspace | None = None, *, resume: bool = True) -> None:
        super().__init__()
        self.workspace = workspace or Workspace(Path.cwd())
        self._resume = resume
        self.sub_title = f"{inert_line(self.workspace.root)}  ·  v{__version__}"

    def get_default_screen(self) -> Screen:
        # Home is the bottom of the stack (not pushed over Textual's blank default screen): one screen to
        # build and lay out before the first frame, not two (benchmarks/startup.py).
        return HomeScreen()

    def on_mount(self) -> None:
        keymap = load_keymap()
        if keymap:
            self.set_keymap(keymap)
        last = self.workspace.last_screen
        if self._resume and last and last != "home":
            if last in STEP_KEYS:
                self.action_open_step(last)

    # --- navigation -------------------------------------------------------------------------
    def action_open_step(self, key: str) -> None:
        spec = step_by_key(key)
        # One step screen at a time above home (the bottom of the stack): going to another step replaces
        # the current one; dialogs above it close.
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if isinstance(self.screen, StepScreen) and self.screen.step_key == key:
            return
        if len(self.screen_stack) == 2:
            self.pop_screen()
        screen_cls = spec.load_screen()
        self.push_screen(screen_cls())
        self._remember(key)

    def action_home(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self._remember("home")

    def action_next_step(self) -> None:
        """``g``: open the first step that is not done (statuses read off the UI thread)."""
        self.start_job("next-step", self.workspace.next_step, done=self._open_next_step)

    def _open_next_step(self, key: str | None) -> None:
        if key is None:
            self.notify("Every step is done. ✔")
        else:
            self.action_open_step(key)

    def action_explain_key(self, key: str) -> None:
        """A verb key pressed where it does nothing: say so, and where it works."""
        self.notify(explanation(key, screen_title(self.screen)), timeout=4)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        extra = self.screen.help_text if isinstance(self.screen, StepScreen) else ""
        here, everywhere = bindings_of(self.screen)
        self.push_screen(HelpScreen(screen_title(self.screen), here, everywhere, extra))

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every toast is plain text: its words carry file names, tool errors and run names from outside, so
        they are never read as Textual markup (a ``[/]`` in a name crashed the app) and lose every control
        sequence. No toast here uses markup on purpose; the ``markup`` argument is accepted and ignored."""
        super().notify(inert(message), title=inert_line(title), severity=severity, timeout=timeout, markup=False)

    def _remember(self, key: str) -> None:
        try:
            self.workspace.touch(last_screen=key)
        except OSError as exc:  # a read-only workspace must not break navigation
            self.notify(f"cannot save workspace state: {exc}", severity="warning")

    # --- command palette --------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Home", "Back to the list of steps", self.action_home)
        for spec in STEPS:
            yield SystemCommand(
                f"Step {spec.number}: {spec.title}", spec.blurb, lambda key=spec.key: self.action_open_step(key),
            )
        yield SystemCommand("Export report", "Write the migration as one HTML document in the workspace",
                            self.action_export_report)
        yield SystemCommand("Help", "Show the keys of this screen", self.action_help)

    # --- export ---------------------------------------------------------------------------------
    def action_export_report(self) -> None:
        """Write ``hipwizard-report.html`` in the workspace (``hipwizard report`` in a subprocess)."""
        from hipwizard.tui.export import export_report

        self.notify("Writing the migration report …", timeout=3)
        self.start_job("export", export_report, self.workspace,
                       done=lambda path: self.notify(f"✔ Report written: {path}", timeout=10),
                       failed=lambda text: self.notify(f"✖ {text}", severity="error", timeout=10))
