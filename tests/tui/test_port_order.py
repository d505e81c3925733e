"""Pilot: the Port screen's "flagged" filter starts where the porting work is (issue 32 item 4): the most telling
hunk first, and the screen says the order in words."""

from __future__ import annotations

from hipwizard.port import measured
from hipwizard.port.state import record_link
from hipwizard.tui.app import HipwizardApp
from hipwizard.workspace import Workspace
from tests.port.test_review_order import TABLE, telling_review
from tests.tui.test_port_screen import SIZE, _open


async def test_f_shows_the_flagged_hunks_most_telling_first(tmp_path, monkeypatch):
    monkeypatch.setattr(measured, "measured", lambda: TABLE)
    review = telling_review(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        assert screen.nav.current.file == "a.cu"  # every hunk, file order: a.cu first
        await pilot.press("f")
        await pilot.pause()
        assert screen.nav.filter == "flagged"
        top = screen.nav.current
        # b.cu's CUBLASLT hunk (measured 0.9) before a.cu's DRIVER_JIT (0.6) and either WARP32_LITERAL (0.2)
        assert top is not None and top.file == "b.cu" and [f.rule_id for f in top.flags] == ["CUBLASLT"]
        status = str(screen.query_one("#port-status").render())
        assert "Flagged, most telling first" in status
        await pilot.press("j")
        await pilot.pause()
        assert [f.rule_id for f in screen.nav.current.flags] == ["WARP32_LITERAL"]
        assert screen.nav.current.file == "b.cu"
        await pilot.press("j")
        await pilot.pause()
        assert [(h.file, [f.rule_id for f in h.flags]) for h in [screen.nav.current]] == [("a.cu", ["DRIVER_JIT"])]
