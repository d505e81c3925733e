"""``?``: the keys of the screen underneath, with what they do."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, title: str, rows: list[tuple[str, str]], extra: str = "") -> None:
        super().__init__()
        self._title = title
        self._rows = rows
        self._extra = extra

    def compose(self) -> ComposeResult:
        from rich.table import Table

        table = Table(title=f"Keys — {self._title}", expand=True, show_edge=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("does")
        for key, desc in self._rows:
            table.add_row(key, desc)
        with VerticalScroll(id="help-box"):
            yield Static(table)
            if self._extra:
                yield Static(self._extra, id="help-extra")
            yield Static("Esc closes this help. Ctrl+P opens the command palette.", id="help-foot")


def bindings_of(screen) -> list[tuple[str, str]]:
    """(keys, description) for every active binding of ``screen`` and the app, deduplicated."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _ns, binding, _enabled, _tooltip in _active(screen):
        if not binding.description or binding.description in seen:
            continue
        seen.add(binding.description)
        rows.append((screen.app.get_key_display(binding), binding.description))
    return rows


def _active(screen):
    for key, active in screen.active_bindings.items():
        yield active.node, active.binding, active.enabled, active.tooltip
