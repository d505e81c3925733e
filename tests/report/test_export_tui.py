"""The TUI's Export: E on Home (and the palette's 'Export report') writes hipwizard-report.html through the real
`hipwizard report` subprocess, and says where (matplotlib loads only in that subprocess: tests/test_architecture.py's HEAVY list)."""

from __future__ import annotations

from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.export import REPORT_NAME
from hipwizard.workspace import Workspace
from tests.tui.waiting import until


async def test_e_on_home_writes_the_report_and_names_it(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    app = HipwizardApp(ws)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("E")
        await until(pilot, lambda: (ws.root / REPORT_NAME).exists(), timeout=120)
        await until(pilot, lambda: any("Report written" in str(n.message) for n in app._notifications), timeout=10)
    html = (ws.root / REPORT_NAME).read_text()
    assert "<section id=\"doctor\">" in html and "The doctor has not run" in html
