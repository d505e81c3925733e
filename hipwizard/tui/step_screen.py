"""The contract every step screen meets, declared once: ``StepScreen``.

A step screen says which step it is (``step_key``, one of ``hipwizard.steps.STEP_KEYS``), what ``?`` shows
for it (``help_title``, ``help_text``) and whether a long job holds it (``busy``: the job's words, "" when
idle). The app reads these typed (``screen_title``), never by ``getattr``. Setting ``busy`` redraws the
screen's status line through ``show_status`` (the hook a screen with a status line overrides); actions that
must wait for the job are decorated with ``when_idle``, which says "Wait: <the job>" instead of acting.
"""

from __future__ import annotations

from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

from textual.reactive import reactive
from textual.screen import Screen

from hipwizard.tui.workers import Jobs

if TYPE_CHECKING:
    from textual import getters

    from hipwizard.tui.app_base import WorkspaceApp

Action = TypeVar("Action", bound=Callable[..., Any])


class StepScreen(Jobs, Screen):
    step_key: ClassVar[str]  # the step's key in hipwizard.steps (workspace state, 1-4, resume)
    help_title: ClassVar[str]  # ?'s heading, and the screen's name in "x does nothing on <title>"
    help_text: ClassVar[str] = ""  # ?'s words under the key table: what the screen shows and how to read it

    busy: reactive[str] = reactive("", repaint=False)  # the job that holds the screen, in words; "" when idle
    if TYPE_CHECKING:
        app = getters.app(WorkspaceApp)  # typed for the checker; at run time Textual's own property

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("step_key", "help_title"):
            if not isinstance(getattr(cls, name, None), str):
                raise TypeError(f"{cls.__name__} must declare {name} (a str) as a StepScreen")

    def heading(self) -> str:
        """?'s heading for the screen as it is now (a screen with tabs names the one shown)."""
        return self.help_title

    def show_status(self) -> None:
        """Redraw the status line (called when ``busy`` changes). A screen with a status line overrides it."""

    def watch_busy(self) -> None:
        if self.is_mounted:
            self.show_status()


def when_idle(action: Action) -> Action:
    """An action that waits for the screen's job: while ``busy``, it says what to wait for and does nothing."""

    @wraps(action)
    def guarded(self: StepScreen, *args: Any, **kwargs: Any) -> Any:
        if self.busy:
            self.notify(f"Wait: {self.busy}", severity="warning")
            return None
        return action(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


def screen_title(screen: Screen) -> str:
    """How help and the key explanations name ``screen``: a step screen's heading, else its class name
    without "Screen" (Home)."""
    if isinstance(screen, StepScreen):
        return screen.heading()
    return type(screen).__name__.removesuffix("Screen")
