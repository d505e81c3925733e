"""Pilot tests of the Port screen's safety: one writer per review (a second session is read-only and says so)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from hipwizard.port.state import record_link
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace
from tests.port.review_factory import new_review
from tests.tui.waiting import notifications, until

HOLDER = """
import sys
from hipwizard.port.review.state import ReviewState
review = ReviewState.load(sys.argv[1], lock="hold")
print("ready", flush=True)
sys.stdin.read()
"""


def _status(screen) -> str:
    return str(screen.query_one("#port-status").render())


async def test_a_review_held_by_another_process_opens_read_only_and_keys_say_why(tmp_path):
    review = new_review(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(review.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        app = HipwizardApp(ws)
        async with app.run_test(size=(110, 32)) as pilot:
            await pilot.press("2")
            await app.workers.wait_for_complete()
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, PortScreen) and screen.review is not None
            assert "READ-ONLY" in _status(screen) and f"pid {holder.pid}" in _status(screen)
            first = screen.nav.current.hunk_id
            for key in ("y", "n", "a", "u", "w"):
                await pilot.press(key)
            await pilot.pause()
            said = notifications(app)
            assert any("Read-only" in m and "another session" in m for m in said), said
            assert screen.review.decision(first).state == "pending" and not screen.review.journal.exists()
            holder.stdin.close()  # the other session ends: r re-reads and this one becomes the writer
            holder.wait(timeout=10)
            await pilot.press("r")
            await app.workers.wait_for_complete()
            await until(pilot, lambda: "READ-ONLY" not in _status(screen))
            await pilot.press("y")
            await pilot.pause()
            assert screen.review.read_only is None
            assert screen.review.decision(first).state == "accepted"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)


@pytest.mark.slow
async def test_e_without_editor_variables_falls_back_to_an_editor_on_the_path(tmp_path, monkeypatch):
    review = new_review(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nano"  # found by name on the PATH, as a real nano would be
    script.write_text('#!/bin/sh\nsed -i "s/hip/BY_NANO_/" "$1"\n')
    script.chmod(0o755)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    (bin_dir / "sed").symlink_to(shutil.which("sed"))  # the PATH holds only this folder: no other editor
    monkeypatch.setenv("PATH", str(bin_dir))
    app = HipwizardApp(ws)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        hunk = screen.nav.current
        await pilot.press("e")
        await pilot.pause()
        d = screen.review.decision(hunk.hunk_id)
        assert d.state == "edited" and any("BY_NANO_" in x for x in d.lines)
