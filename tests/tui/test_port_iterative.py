"""Pilot: the Port screen on an iterative port — a hunk changed since the user decided shows the old decision,
decided hunks that vanished and a write's conflict with hand edits are listed in the results panel, and the
user's file is left as it is."""

from __future__ import annotations

import json

from hipwizard.cli import main
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.dialogs import ConfirmWrite
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace
from tests.port.test_iterative_port import KERNEL
from tests.tui.test_port_conflicts import written_then_edited
from tests.tui.test_port_screen import SIZE, _body


def _rows(results) -> list[str]:
    return [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]


def _hipify(tmp_path) -> None:
    assert main(["hipify", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path),
                 "--backend", "builtin", "--hip-version", "6.1", "--no-check", "--json"]) == 0


async def test_port_screen_shows_changed_vanished_and_conflicts(tmp_path, capsys):
    target, mine = written_then_edited(tmp_path)
    edited = KERNEL.replace("cudaFree(d);", "cudaFree(d);  // release").replace("  // wait\n  cudaDeviceSynchronize();\n", "")
    (tmp_path / "src" / "k.cu").write_text(edited)
    _hipify(tmp_path)  # the re-run: the free() hunk changed, the sync hunk vanished
    capsys.readouterr()

    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PortScreen) and screen.review is not None
        body = _body(screen)
        assert "changed since you decided (was accepted)" in body and "hipFree(d);  // release" in body
        rows = _rows(screen.query_one("#port-results"))
        assert "✗ 1 decided hunk(s) vanished from the translation:" in rows
        assert any("k.cu:14  was accepted" in r for r in rows)
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmWrite)  # the changed hunk is pending
        await pilot.click("#confirm-yes")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = _rows(screen.query_one("#port-results"))
        assert any(r.startswith("✖ 1 file(s) in conflict with your edits (your file kept)") for r in rows), rows
        assert any("✖ k.cu: 1 conflict(s) between your edits and the new result" in r for r in rows), rows
    assert target.read_text() == mine
    assert main(["review", str(tmp_path / "out"), "--summary", "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)["worktree"]["conflicts"]) == ["k.cu"]
