"""The hunk on the right of the Port screen: a coloured unified diff with line numbers, its decision in
words and symbols, its risk flags and any compile errors blamed on it.

``HunkView`` shows it through Textual's line API: the hunk is rendered to strips once (cached per hunk,
decision and width), and moving to another hunk repaints this widget only — no screen layout, which is
what made ``j`` cost tens of milliseconds with a Static inside a VerticalScroll.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from functools import lru_cache

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hipwizard.port import Hunk, RiskFlag, UntouchedRisk

DECISION_LABEL = {
    "pending": "○ pending",
    "accepted": "✔ accepted",
    "rejected": "✖ rejected",
    "edited": "✎ edited (your text is applied)",
}
SEVERITY_LABEL = {"high": "✖ high", "med": "⚠ med", "low": "ℹ low"}
SEVERITY_STYLE = {"high": "bold red", "med": "bold yellow", "low": "bold cyan"}


@lru_cache(maxsize=1)
def _highlighter() -> Syntax:
    # One Syntax object reused: building the pygments lexer is the slow part.
    return Syntax("", "cuda", theme="monokai", background_color="default")


def _highlight(lines: list[str]) -> list[Text]:
    if not lines:
        return []
    # Copies: rows built from these Texts are styled in place; the cached originals must stay clean.
    return [t.copy() for t in _highlight_cached(tuple(lines))]


@lru_cache(maxsize=4096)
def _highlight_cached(lines: tuple[str, ...]) -> tuple[Text, ...]:
    # Pygments is the slow part of drawing a hunk: the same lines (going back with k, undo, a
    # decision redrawing the hunk) are highlighted once.
    code = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    text = _highlighter().highlight(code)
    text.rstrip()
    return tuple(text.split("\n", allow_blank=True)[: len(lines)])


def _row(mark: str, old_no: int | None, new_no: int | None, body: Text, style: str) -> Text:
    nums = f"{old_no if old_no else '':>5} {new_no if new_no else '':>5} "
    row = Text(nums, style="dim")
    row.append(f"{mark} ", style=style or "dim")
    row.append_text(body)
    if style:
        row.stylize(style, len(nums))
    return row


def _flag_lines(f: RiskFlag, indent: str = "", at: str = "") -> list[Text]:
    """A flag as rows: severity, rule id and reason (then ``at``), the fix hint, the source."""
    line = Text(indent)
    line.append(f"{SEVERITY_LABEL[f.severity]} {f.rule_id}", style=SEVERITY_STYLE[f.severity])
    line.append(f"  {f.reason}")
    if at:
        line.append(f"  ({at})", style="dim")
    rows = [line, Text(f"{indent}    fix: {f.hint}")]
    if f.source:
        rows.append(Text(f"{indent}    source: {f.source}", style="dim"))
    return rows


def render_untouched(risks: tuple[UntouchedRisk, ...]) -> list[RenderableType]:
    """The section "Risks on unchanged lines of this file": per risk its line numbers and code, then the
    flag. Nothing to accept or reject: the translation did not touch these lines, a person must."""
    if not risks:
        return []
    head = Text(f"⚑ Risks on unchanged lines of this file ({len(risks)})", style="bold")
    head.append(" — the translation left these lines as they were: edit them by hand", style="italic")
    rows: list[RenderableType] = [Text(""), head]
    codes = _highlight([r.code for r in risks])
    for r, code in zip(risks, codes, strict=False):
        rows.append(_row("⚑", r.old_line, r.flag.line, code, ""))
        # Indented as a block, so a long reason or source wraps under itself, not under the line numbers.
        rows.append(Padding(Group(*_flag_lines(r.flag)), (0, 0, 0, 6)))
    return rows


def render_file_risks(rel: str, risks: tuple[UntouchedRisk, ...], where: str) -> Group:
    """What the hunk view shows on a file listed for its risks on unchanged lines only."""
    header = Text()
    header.append(rel, style="bold")
    header.append(f"   {where}   ")
    header.append("ℹ nothing to accept or reject", style="bold")
    return Group(header, *render_untouched(risks))


def render_hunk(hunk: Hunk, decision: str, *, edited: list[str] | None, changed: bool, where: str,
                errors: Sequence[tuple[int | None, str]] = (), untouched: tuple[UntouchedRisk, ...] = (),
                was: str = "") -> Group:
    """What the hunk view shows for ``hunk``: header, diff, flags, compile errors, then the risks on
    unchanged lines of its file (``untouched``). ``was``: the decision made on this hunk's earlier text."""
    header = Text()
    header.append(f"{hunk.file}", style="bold")
    header.append(f"   {where}   ")
    header.append(DECISION_LABEL[decision], style="bold reverse" if decision != "pending" else "bold")
    if changed and was:
        header.append(f"   ⟳ changed since you decided (was {was})", style="bold yellow")
    elif changed:
        header.append("   ⟳ changed since the review started", style="bold yellow")
    old_end = hunk.old_start + max(len(hunk.old_lines) - 1, 0)
    new_end = hunk.new_start + max(len(hunk.new_lines) - 1, 0)
    span = Text(f"original L{hunk.old_start}-{old_end}  →  translated L{hunk.new_start}-{new_end}", style="dim")
    rows: list[Text] = []
    first_ctx = hunk.old_start - len(hunk.context_before)
    for k, body in enumerate(_highlight(hunk.context_before)):
        rows.append(_row(" ", first_ctx + k, None, body, ""))
    for k, body in enumerate(_highlight(hunk.old_lines)):
        rows.append(_row("-", hunk.old_start + k, None, body, "on #3b0d0d"))
    new_side = edited if edited is not None else hunk.new_lines
    mark = "✎" if edited is not None else "+"
    for k, body in enumerate(_highlight(new_side)):
        rows.append(_row(mark, None, hunk.new_start + k, body, "on #0d3b12"))
    after_no = hunk.old_start + len(hunk.old_lines)
    for k, body in enumerate(_highlight(hunk.context_after)):
        rows.append(_row(" ", after_no + k, None, body, ""))
    if edited is not None:
        rows.append(Text(f"      ✎ your edit replaces the translation ({len(hunk.new_lines)} lines)", style="italic"))
    # The flags in one line each above the diff: at 80x24 the details below are past the fold (PgDn).
    brief = [Text.assemble((f"{SEVERITY_LABEL[f.severity]} {f.rule_id}", SEVERITY_STYLE[f.severity]),
                           f"  {f.reason}", no_wrap=True, overflow="ellipsis") for f in hunk.flags]
    if brief:
        brief.append(Text("  details below the diff · PgDn/↓ scroll", style="dim"))
    parts: list = [header, span, *brief, Text(""), *rows]
    if hunk.flags:
        parts.append(Text(""))
        for f in hunk.flags:
            parts.extend(_flag_lines(f, at=f"translated L{f.line}" if f.line else ""))
    else:
        parts.append(Text("\n✔ no risk flags on this hunk", style="dim"))
    for line_no, message in errors:
        parts.append(Text(f"✖ compile error at written L{line_no}: {message}", style="bold red"))
    parts.extend(render_untouched(untouched))
    return Group(*parts)


class HunkView(ScrollView, can_focus=True):
    """A scrollable view of one rendered hunk. ``show(key, renderable)``: ``key`` identifies what the
    renderable shows (hunk, decision, position, errors), so drawing the same thing again is free.
    ``content`` is the renderable shown (tests read it as text)."""

    CACHE_SIZE = 64

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.content: RenderableType = ""
        self._key: Hashable = None
        self._lines: list[Strip] = []
        self._style: Style | None = None
        self._paint = (None, 0, 0)
        self._cache: OrderedDict[tuple, list[Strip]] = OrderedDict()

    def show(self, key: Hashable, renderable: RenderableType) -> None:
        self.content, self._key = renderable, key
        self._draw()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        # The full width inside the padding, whether or not the previous hunk needed a scrollbar.
        width, height = self.content_region.width, self.content_region.height
        if width <= 0 or height <= 0:
            return  # not laid out yet: drawn on the first resize
        lines = self._render_at(width)
        bar = self.styles.scrollbar_size_vertical
        if len(lines) > height and width - bar > 0:  # a scrollbar takes its columns: draw narrower
            lines = self._render_at(width - bar)
        self._lines = lines
        # The virtual height never drops below the view, so hunks that fit keep the same virtual size
        # and the screen needs no new layout when the next one is shown.
        self.virtual_size = Size(lines[0].cell_length if lines else width, max(len(lines), height))
        self.refresh()

    def _render_at(self, width: int) -> list[Strip]:
        # The widget's style (colours of the theme, focus background) is part of the drawing: a hunk
        # drawn while focused is drawn again once blurred.
        style = self.rich_style
        cache_key = (self._key, width, style)
        lines = self._cache.get(cache_key) if self._key is not None else None
        if lines is None:
            console = self.app.console
            rendered = console.render_lines(self.content, console.options.update_width(width), style=style,
                                            pad=True, new_lines=False)
            lines = [Strip(line, width) for line in rendered]
            if self._key is not None:
                self._cache[cache_key] = lines
                if len(self._cache) > self.CACHE_SIZE:
                    self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(cache_key)
        self._style = style
        return lines

    def render_lines(self, crop):
        # The style walks the DOM: look it up once per repaint, not once per line.
        style = self.rich_style
        if self._lines and self._style != style:  # focus or theme changed since drawn
            self._lines = self._render_at(self._lines[0].cell_length)
        self._paint = (style, self.scroll_offset.y, self.scrollable_content_region.width)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        style, top, width = self._paint
        index = y + top
        if 0 <= index < len(self._lines):
            line = self._lines[index]
            return line if line.cell_length == width else line.crop_extend(0, width, style)
        return Strip.blank(width, style)
