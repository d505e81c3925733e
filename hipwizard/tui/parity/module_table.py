"""The Parity dashboard's module table: one row per module, the verdict and the module name first.

The columns follow the table's width (``views.fit_columns``): a narrow window drops the lower-priority
columns (the details pane shows them for the highlighted module); a module name longer than the window
scrolls sideways. The table rebuilds itself only when the set of columns that fits changes.
"""

from __future__ import annotations

from rich.markup import escape as rich_escape
from textual import events
from textual.widgets import DataTable

from hipwizard.parity import Comparison
from hipwizard.textsafe import inert_line
from hipwizard.tui.parity import views


class ModuleTable(DataTable):
    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.comparison: Comparison | None = None
        self._shown: tuple[str, ...] = ()

    def show(self, comp: Comparison | None, cursor: str | None = None) -> None:
        """Fill the table with ``comp``'s modules and put the cursor on the module named ``cursor``."""
        self.comparison = comp
        self._rebuild(cursor)

    def on_resize(self, _event: events.Resize) -> None:
        if tuple(c.key for c in self._fit()) != self._shown:
            self._rebuild(self._highlighted())

    def _fit(self) -> list[views.Column]:
        width = self.size.width - self.styles.scrollbar_size_vertical
        return views.fit_columns(self.comparison, width) if width > 0 else list(views.COLUMNS)

    def _highlighted(self) -> str | None:
        """The module under the cursor (rows are the comparison's layers, in order)."""
        layers = self.comparison.layers if self.comparison is not None else []
        return layers[self.cursor_row].name if 0 <= self.cursor_row < min(len(layers), self.row_count) else None

    def _rebuild(self, cursor: str | None) -> None:
        columns = self._fit()
        self._shown = tuple(c.key for c in columns)
        self.clear(columns=True)
        for col in columns:
            self.add_column(col.label, key=col.key)
        comp = self.comparison
        if comp is None:
            return
        for layer in comp.layers:
            # DataTable reads a str cell as Rich markup: a module name from a capture is shown as it is (Rich's
            # escape, for Rich's parser), with no control character
            self.add_row(*(rich_escape(inert_line(col.cell(layer, comp))) for col in columns), key=layer.name)
        names = [layer.name for layer in comp.layers]
        if cursor in names:
            self.move_cursor(row=names.index(cursor), animate=False)
