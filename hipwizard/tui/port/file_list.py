"""The Port screen's file list: one row per file, never wrapped, redrawn one row at a time.

Each row is a plain-text prompt of a few lines ("○ kernels/softmax.cu" then its counts). Rows are fitted to
the list's width: a path too long is cut in the middle ("kernels/at…/softmax.cu": the file name stays),
other lines are cut at the end with "…", so a row keeps its height at any width (80x24 included) and a
resize fits them again.

``OptionList.replace_option_prompt_at_index`` drops every cached row and re-measures all of them (500
files: ~15 ms per decision). A decision changes one row's counts, never its height, so only that row's
cached drawing is dropped and only its lines are repainted. This leans on OptionList internals of
Textual 8 (``_line_cache``, ``_option_render_cache``); where they are missing it falls back to the
public call.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual import events
from textual.visual import VisualType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

ELLIPSIS = "…"


def cut_middle(path: str, width: int) -> str:
    """``path`` in at most ``width`` cells, its middle replaced by "…": the file name stays whole when it
    fits ("kernels/at…/softmax.cu"), else its end does ("…ard_kernel.cu")."""
    if cell_len(path) <= width:
        return path
    if width <= 1:
        return ELLIPSIS[:width]
    name = path.rsplit("/", 1)[-1]
    tail = len(name) + 1 if len(name) + 2 <= width else width - 1  # "/name", or the end of the name
    head = width - 1 - tail
    return path[:head] + ELLIPSIS + path[len(path) - tail:]


def cut_end(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)) + ELLIPSIS if width > 0 else ""


def fit_prompt(prompt: str, width: int) -> str:
    """A file row fitted to ``width`` cells: the first line "<symbol> <path>" keeps its symbol and cuts the
    path in the middle; the other lines are cut at the end. ``width`` <= 0 (not laid out yet): unchanged."""
    if width <= 0:
        return prompt
    first, *rest = prompt.split("\n")
    symbol, sep, path = first.partition(" ")
    if sep and cell_len(symbol) <= 2:
        first = symbol + sep + cut_middle(path, width - cell_len(symbol) - 1)
    else:
        first = cut_middle(first, width)
    return "\n".join([first, *(cut_end(line, width) for line in rest)])


class FileList(OptionList):
    def __init__(self, *content, **kwargs) -> None:
        super().__init__(*content, **kwargs)
        self._rows: list[tuple[str, str]] = []  # (option id, unfitted prompt) of the rows set by ``fill``
        self._fitted: list[str] = []  # the prompts as shown, fitted to ``_fitted_to`` cells
        self._fitted_to = 0

    def text_width(self) -> int:
        """Cells a prompt line may take: the content width less the gutter and the option padding."""
        region = self.scrollable_content_region
        if not region.width:
            return 0
        gutter = getattr(self, "_get_left_gutter_width", lambda: 0)()
        padding = self.get_component_styles("option-list--option").padding
        return max(region.width - gutter - padding.width, 0)

    def fill(self, rows: list[tuple[str, str]]) -> None:
        """Show ``rows`` ((id, prompt) each), fitted to the current width; the highlight stays on its row."""
        self._rows = list(rows)
        self._fitted_to = self.text_width()
        self._fitted = [fit_prompt(p, self._fitted_to) for _, p in self._rows]
        highlighted = self.highlighted
        self.clear_options()
        self.add_options([Option(Text(text), id=rid) for (rid, _), text in zip(self._rows, self._fitted, strict=True)])
        if highlighted is not None and self._rows:
            self.highlighted = min(highlighted, len(self._rows) - 1)

    def on_resize(self, _event: events.Resize) -> None:
        width = self.text_width()
        if not self._rows or width == self._fitted_to:
            return
        fitted = [fit_prompt(p, width) for _, p in self._rows]
        if fitted == self._fitted:  # every row already fits (short names): nothing to redraw
            self._fitted_to = width
            return
        self.fill(self._rows)

    def set_prompt_at(self, index: int, prompt: VisualType) -> None:
        """Replace the prompt of row ``index`` (a plain-text prompt is fitted to the width), repainting only
        that row when its height is unchanged."""
        if isinstance(prompt, str):
            fitted = fit_prompt(prompt, self._fitted_to if self._rows else self.text_width())
            if 0 <= index < len(self._rows):
                self._rows[index] = (self._rows[index][0], prompt)
                self._fitted[index] = fitted
            prompt = Text(fitted)
        line_cache = getattr(self, "_line_cache", None)
        render_cache = getattr(self, "_option_render_cache", None)
        heights = getattr(line_cache, "heights", None)
        if (line_cache is None or not heights or index not in heights or render_cache is None
                or not self.scrollable_content_region):
            self.replace_option_prompt_at_index(index, prompt)
            return
        option = self.get_option_at_index(index)
        option._set_prompt(prompt)
        padding = self.get_component_styles("option-list--option").padding
        width = self.scrollable_content_region.width - self._get_left_gutter_width() - padding.width
        # Textual's OptionList passes its styles here too (a RenderStyles reads as the rules map it wants).
        height = self._get_visual(option).get_height(self.styles, width)  # type: ignore[arg-type]
        if height + option._divider != heights[index]:
            self._clear_caches()  # the row grew or shrank: every row below moves
            return
        for key in [k for k in render_cache.keys() if k[0] is option]:
            render_cache.discard(key)
        self.refresh_lines(line_cache.index_to_line[index], heights[index])
