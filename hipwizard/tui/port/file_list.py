"""The Port screen's file list: an OptionList whose rows can be redrawn one at a time.

``OptionList.replace_option_prompt_at_index`` drops every cached row and re-measures all of them (500
files: ~15 ms per decision). A decision changes one row's counts, never its height, so only that row's
cached drawing is dropped and only its lines are repainted. This leans on OptionList internals of
Textual 8 (``_line_cache``, ``_option_render_cache``); where they are missing it falls back to the
public call.
"""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import OptionList


class FileList(OptionList):
    def set_prompt_at(self, index: int, prompt: VisualType) -> None:
        """Replace the prompt of row ``index``, repainting only that row when its height is unchanged."""
        line_cache = getattr(self, "_line_cache", None)
        render_cache = getattr(self, "_option_render_cache", None)
        heights = getattr(line_cache, "heights", None)
        if not heights or index not in heights or render_cache is None or not self.scrollable_content_region:
            self.replace_option_prompt_at_index(index, prompt)
            return
        option = self.get_option_at_index(index)
        option._set_prompt(prompt)
        padding = self.get_component_styles("option-list--option").padding
        width = self.scrollable_content_region.width - self._get_left_gutter_width() - padding.width
        if self._get_visual(option).get_height(self.styles, width) + option._divider != heights[index]:
            self._clear_caches()  # the row grew or shrank: every row below moves
            return
        for key in [k for k in render_cache.keys() if k[0] is option]:
            render_cache.discard(key)
        self.refresh_lines(line_cache.index_to_line[index], heights[index])
