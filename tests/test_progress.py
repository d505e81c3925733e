"""The one progress type and its terminal reporter."""

from __future__ import annotations

import io

from hipwizard.progress import Progress, stderr_reporter, terminal_progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_names_stage_count_and_item():
    assert Progress("translating", 3, 10, "kernels/softmax.cu").text() == "translating 3/10 kernels/softmax.cu"
    assert Progress("loading model").text() == "loading model"
    assert Progress("probing", 2).text() == "probing 2"
    assert Progress("x", 2, 2).finished and not Progress("x", 1, 2).finished and not Progress("x").finished


def test_no_reporter_off_a_terminal():
    assert stderr_reporter(io.StringIO()) is None
    with terminal_progress(io.StringIO()) as report:
        assert report is None


def test_terminal_line_overwrites_itself_ends_when_counted_and_is_cleared_after():
    tty = _Tty()
    with terminal_progress(tty) as report:
        report(Progress("compiling", 1, 2, "a.hip"))
        report(Progress("compiling", 2, 2, "b.hip"))
        report(Progress("loading model"))
    out = tty.getvalue()
    assert out.count("\n") == 1  # only the counted stage that finished ends its line
    assert "\r\033[Kcompiling 2/2 b.hip\n" in out
    assert out.endswith("loading model\r\033[K")  # an uncounted stage's line is cleared on the way out
