"""``FollowLog``: a RichLog that keeps following its newest line when its own size changes.

RichLog scrolls to the end when a line is written, but not when the panels around it change height (a failure
box appears, the plots collapse, the GPU panel gains a line): its ``max_scroll_y`` moves and ``scroll_y`` stays,
so the log shows a line behind its end until the next write — which, for a finished run, never comes. On a
resize this log asks whether it was at its end under the old height (its scroll position against the end the old
height had) and, if so, scrolls to the new end once laid out. The same when a horizontal scrollbar appears (a
line wider than the log): it takes a row from the view, so the end moves one line down. A user who scrolled up
stays where they are.
"""

from __future__ import annotations

from textual import events
from textual.widgets import RichLog


class FollowLog(RichLog):
    _height_before: int | None = None

    def on_resize(self, event: events.Resize) -> None:
        # Textual runs RichLog's own on_resize too (handlers of every class in the MRO are called).
        before, self._height_before = self._height_before, event.size.height
        if before is None:
            return
        old_end = max(0, self.virtual_size.height - before)
        if self.scroll_y >= old_end - 1:
            self.call_after_refresh(self.scroll_end, animate=False)

    def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
        if shown and self.scroll_y >= self.max_scroll_y - self.scrollbar_size_horizontal - 1:
            self.call_after_refresh(self.scroll_end, animate=False)
