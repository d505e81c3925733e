"""The Doctor's paste box (p): recognised parts shown live, nothing recognisable stays open with the reason
inline, ctrl+s checks the paste through the same service as `hipwizard doctor --paste`."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static, TextArea

from hipwizard.doctor.probe.replay import ReplayRunner, read_recording
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.doctor.paste_box import PasteBox
from hipwizard.tui.doctor.screen import DoctorScreen
from hipwizard.workspace import Workspace

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.slow
async def test_paste_box_checks_a_pasted_log_and_refuses_prose_inline(tmp_path):
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(FIXTURES / "doctor" / "nogpu-debian")
    log = "$ rocminfo\n" + read_recording(FIXTURES / "rocm" / "rocminfo-8xMI300X-ROCm-ROCm-4021.txt").result.stdout
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DoctorScreen) and screen.report.failed
        await pilot.press("p")
        await pilot.pause()
        box = app.screen
        assert isinstance(box, PasteBox)
        box.query_one(TextArea).text = "my GPU is broken, please help"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is box  # stays open, the reason inline
        assert "no tool output recognised" in str(box.query_one("#paste-status", Static).render())
        box.query_one(TextArea).text = log
        await pilot.pause()
        assert "rocminfo" in str(box.query_one("#paste-status", Static).render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen
        assert screen.report.origin == "paste of the paste box"
        assert "8 × AMD Instinct MI300X" in screen.report.checks[0].found
        assert any(c.status == "unknown" for c in screen.report.checks)
    folders = list((tmp_path / ".hipwizard").glob("doctor-paste-*"))
    assert len(folders) == 1 and (folders[0] / "rocminfo.txt").is_file()
