"""The run log keeps showing its newest line when the panels around it change height (and stays put when the
user scrolled up): the cause of a 1-in-3 flaky Train snapshot, where the log was left a few lines behind."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hipwizard.tui.follow_log import FollowLog
from tests.tui.waiting import until


class LogApp(App):
    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("box", id="box")
            yield FollowLog(id="log")


def _at_end(log) -> bool:
    return log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y


async def test_the_log_follows_its_end_through_a_resize_unless_scrolled_up():
    app = LogApp()
    async with app.run_test(size=(60, 20)) as pilot:
        log, box = app.query_one(FollowLog), app.query_one("#box")
        for i in range(100):
            log.write(f"line {i}")
        await until(pilot, lambda: _at_end(log))
        box.styles.height = 10  # the log gets shorter: its end moves down, nothing is written
        await until(pilot, lambda: log.size.height < 15)
        await until(pilot, lambda: _at_end(log))
        box.styles.height = 1  # and taller again
        await until(pilot, lambda: log.size.height > 15)
        await until(pilot, lambda: _at_end(log))
        log.scroll_to(y=10, animate=False)  # the user reads older lines
        await until(pilot, lambda: log.scroll_y == 10)
        box.styles.height = 8
        await until(pilot, lambda: log.size.height < 15)
        await pilot.wait_for_scheduled_animations()  # what the resize set off has run (no fixed pause)
        await pilot.pause()
        assert log.scroll_y == 10
