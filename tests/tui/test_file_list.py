"""FileList.set_prompt_at: the row shows its new text; a row whose height changes moves the rows below."""

from __future__ import annotations

from textual.app import App
from textual.widgets.option_list import Option

from hipwizard.tui.port.file_list import FileList


class _Files(App):
    def compose(self):
        yield FileList(*[Option(f"○ f{n}.cu\n  ○{n}", id=f"f{n}") for n in range(50)])


def _painted(files: FileList, y: int) -> str:
    return "".join(seg.text for seg in files.render_line(y)).rstrip()


async def test_a_row_is_repainted_with_its_new_counts_and_the_others_kept():
    app = _Files()
    async with app.run_test(size=(40, 20)) as pilot:
        files = app.query_one(FileList)
        await pilot.pause()
        assert _painted(files, 3).endswith("○1")
        cache = files._option_render_cache
        row0 = next(k for k in cache.keys() if k[0] is files.get_option_at_index(0))
        kept = cache.get(row0)
        files.set_prompt_at(1, "✔ f1.cu\n  ✔1")
        await pilot.pause()
        assert _painted(files, 2).endswith("✔ f1.cu") and _painted(files, 3).endswith("✔1")
        assert _painted(files, 0).endswith("○ f0.cu")
        assert cache.get(row0) is kept  # row 0 was not drawn again
        files.set_prompt_at(1, "✔ f1.cu\n  ✔1\n  ⚑ flagged")  # taller: the rows below move down
        await pilot.pause()
        assert _painted(files, 4).endswith("⚑ flagged") and _painted(files, 5).endswith("○ f2.cu")
