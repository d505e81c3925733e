"""``?``: the keys of the screen underneath, with what they do, then the keys that work everywhere.

Only hipwizard's own bindings are listed (the screen's, its widgets', the app's): not Textual's built-in
scrolling and focus keys, and not the app's hidden "explain" bindings (they have no description).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


@dataclass(frozen=True)
class KeyRow:
    keys: str  # as the footer shows them, several joined by spaces: "↓ j"
    does: str


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, title: str, rows: list[KeyRow], everywhere: list[KeyRow] | None = None,
                 extra: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows
        self.everywhere = everywhere or []
        self._extra = extra

    def compose(self) -> ComposeResult:
        from rich.table import Table

        table = Table(title=f"Keys — {self.title_text}", expand=True, show_edge=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("does")
        for row in self.rows:
            table.add_row(row.keys, row.does)
        if self.everywhere:
            table.add_section()
            table.add_row("", "[b]everywhere[/b]")
            for row in self.everywhere:
                table.add_row(row.keys, row.does)
        with VerticalScroll(id="help-box"):
            yield Static(table)
            if self._extra:
                yield Static(self._extra, id="help-extra")
            yield Static("Esc closes this help. Ctrl+P opens the command palette.", id="help-foot")


def bindings_of(screen) -> tuple[list[KeyRow], list[KeyRow]]:
    """(the screen's keys, the app's keys): every active hipwizard binding with a description; keys that do
    the same thing share one row."""
    here: dict[str, list[str]] = {}
    everywhere: dict[str, list[str]] = {}
    for active in screen.active_bindings.values():
        binding, node = active.binding, active.node
        if not binding.description or not _declared_by_hipwizard(node, binding):
            continue
        section = everywhere if node is screen.app else here
        keys = section.setdefault(binding.description, [])
        shown = screen.app.get_key_display(binding)
        if shown not in keys:
            keys.append(shown)
    # A key the screen also binds (Home's g) is listed once, under the screen.
    for does in list(everywhere):
        if does in here:
            del everywhere[does]
    return ([KeyRow(" ".join(k), d) for d, k in here.items()],
            [KeyRow(" ".join(k), d) for d, k in everywhere.items()])


def _declared_by_hipwizard(node, binding: Binding) -> bool:
    """Whether a class of hipwizard's (not Textual's) declares this binding (compared by action and
    description: a user keymap may have changed its key)."""
    for cls in type(node).__mro__:
        if not cls.__module__.startswith("hipwizard."):
            continue
        for declared in cls.__dict__.get("BINDINGS", ()):
            if isinstance(declared, Binding) and (declared.action, declared.description) == (
                    binding.action, binding.description):
                return True
    return False
