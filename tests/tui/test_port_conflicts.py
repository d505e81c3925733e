"""Pilot: a write's conflict with the user's hand edits is settled from the Port screen's results panel —
highlight the conflict row, m, then m (keep mine) or n (take the new result) in the dialog; escape leaves it.
The conflict is made through the real CLI/services and the real ``git merge-file``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.port.output.worktree import record_dir
from hipwizard.port.review.state import ReviewState, state_path_for
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.dialogs import ChooseRegion, ResolveConflict
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace
from tests.port.test_iterative_port import KERNEL
from tests.tui.test_port_screen import SIZE


def _rows(results) -> list[str]:
    return [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]


def _hipify(tmp_path) -> None:
    assert main(["hipify", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path),
                 "--backend", "builtin", "--hip-version", "6.1", "--no-check", "--json"]) == 0


def written_then_edited(tmp_path) -> tuple[Path, str]:
    """Translate KERNEL, accept every hunk, write, then hand-edit the output's hipFree line.
    Returns the written file and the user's text in it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(KERNEL)
    _hipify(tmp_path)
    review = ReviewState.load(state_path_for(tmp_path / "out"))
    review.decide([h.hunk_id for h in review.hunks], "accepted")
    review.compact()
    assert main(["review", str(tmp_path / "out"), "--write", "--no-check"]) == 0
    target = tmp_path / "out" / "k.cu"
    mine = target.read_text().replace("hipFree(d);", "hipFree(d);  // mine")
    target.write_text(mine)
    return target, mine


def _conflict(tmp_path, capsys) -> tuple[str, bytes]:
    """Write, hand-edit the output, change the source under the edit, write again: k.cu in conflict.
    Returns the user's text and the new result hipwizard kept aside."""
    target, mine = written_then_edited(tmp_path)
    (tmp_path / "src" / "k.cu").write_text(KERNEL.replace("cudaFree(d);", "cudaFree(d);  // release"))
    _hipify(tmp_path)
    # The changed hunk came back pending: written anyway (it keeps the original), the conflict is the point.
    assert main(["review", str(tmp_path / "out"), "--write", "--no-check", "--include-pending"]) == 1
    capsys.readouterr()
    assert target.read_text() == mine
    new = (record_dir(tmp_path / "out") / "new" / "k.cu").read_bytes()
    assert new != mine.encode() and b"// mine" not in new
    return mine, new


async def _open_port(app, pilot) -> PortScreen:
    """From Home, open the Port screen on the workspace's review and let it load."""
    await pilot.press("2")
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.screen


async def _open_and_settle(tmp_path, key: str) -> list[str]:
    """Open the Port screen, highlight the conflict row, press m, then ``key`` in the dialog; the rows after."""
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_port(app, pilot)
        assert isinstance(screen, PortScreen) and screen.review is not None
        results = screen.query_one("#port-results")
        rows = _rows(results)
        assert any("✖ k.cu: 1 conflict(s) between your edits and the new result" in r for r in rows), rows
        await pilot.press("m")  # nothing highlighted in the results yet: says so, no dialog
        await pilot.pause()
        assert isinstance(app.screen, PortScreen)
        results.focus()
        results.highlighted = next(i for i in range(results.option_count)
                                   if results.get_option_at_index(i).id == "conflict|k.cu")
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, ResolveConflict) and app.screen.rel == "k.cu"
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, PortScreen)
        return _rows(screen.query_one("#port-results"))


def _conflicts(tmp_path, capsys) -> dict:
    capsys.readouterr()
    assert main(["review", str(tmp_path / "out"), "--summary", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["worktree"]["conflicts"]


@pytest.mark.slow
async def test_settle_a_conflict_with_mine_keeps_the_file_and_clears_the_conflict(tmp_path, capsys):
    mine, new = _conflict(tmp_path, capsys)
    rows = await _open_and_settle(tmp_path, "m")
    assert not any("conflict" in r for r in rows), rows
    assert (tmp_path / "out" / "k.cu").read_text() == mine
    assert _conflicts(tmp_path, capsys) == {}
    # the new result is the base of the next merge: writing again keeps the user's edit, no conflict
    assert main(["review", str(tmp_path / "out"), "--write", "--no-check", "--include-pending"]) == 0
    assert (tmp_path / "out" / "k.cu").read_text() == mine


@pytest.mark.slow
async def test_settle_a_conflict_with_new_writes_the_new_result(tmp_path, capsys):
    mine, new = _conflict(tmp_path, capsys)
    rows = await _open_and_settle(tmp_path, "n")
    assert not any("conflict" in r for r in rows), rows
    assert (tmp_path / "out" / "k.cu").read_bytes() == new
    assert b"cudaFree(d);  // release" in new  # the changed hunk is pending: the source's text
    assert _conflicts(tmp_path, capsys) == {}


@pytest.mark.slow
async def test_escape_leaves_the_conflict_and_the_file(tmp_path, capsys):
    mine, _ = _conflict(tmp_path, capsys)
    rows = await _open_and_settle(tmp_path, "escape")
    assert any("✖ k.cu: 1 conflict(s)" in r for r in rows), rows
    assert (tmp_path / "out" / "k.cu").read_text() == mine
    assert list(_conflicts(tmp_path, capsys)) == ["k.cu"]


@pytest.mark.slow
async def test_settle_a_conflict_with_merged_writes_the_markers(tmp_path, capsys):
    mine, _ = _conflict(tmp_path, capsys)
    rows = await _open_and_settle(tmp_path, "g")
    assert not any("conflict" in r for r in rows), rows
    text = (tmp_path / "out" / "k.cu").read_text()
    assert "<<<<<<< yours" in text and ">>>>>>> new result" in text and "hipFree(d);  // mine" in text
    assert _conflicts(tmp_path, capsys) == {}


@pytest.mark.slow
async def test_one_conflict_is_decided_from_its_own_row_and_your_edit_is_listed_after(tmp_path, capsys):
    mine, new = _conflict(tmp_path, capsys)
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_port(app, pilot)
        results = screen.query_one("#port-results")
        rows = _rows(results)
        region = next(r for r in rows if "#1 L" in r)
        assert "○ undecided" in region and "// mine" in region and "→ m: decide" in region, rows
        results.focus()
        results.highlighted = next(i for i in range(results.option_count)
                                   if results.get_option_at_index(i).id == "region|1|k.cu")
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, ChooseRegion) and app.screen.hunk.ref == "k.cu#1"
        await pilot.press("escape")  # undecided: nothing written
        await pilot.pause()
        assert isinstance(app.screen, PortScreen) and (tmp_path / "out" / "k.cu").read_text() == mine
        await pilot.press("enter")  # Enter on the row opens it too
        await pilot.pause()
        assert isinstance(app.screen, ChooseRegion)
        await pilot.press("m")
        await pilot.pause()
        rows = _rows(screen.query_one("#port-results"))
    assert not any("conflict" in r or "undecided" in r for r in rows), rows
    assert any("✎ 1 edit(s) of yours in the output, kept on every write" in r for r in rows), rows
    assert any("✎ k.cu#1 L" in r and "// mine" in r for r in rows), rows
    assert (tmp_path / "out" / "k.cu").read_text() == mine  # the only conflict, decided: yours
    assert _conflicts(tmp_path, capsys) == {}
