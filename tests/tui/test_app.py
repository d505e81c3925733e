"""Pilot tests of the app shell: steps reachable by key and mouse, help, palette, resume."""

from __future__ import annotations

from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.help_screen import HelpScreen
from hipwizard.tui.home import HomeScreen
from hipwizard.steps import STEPS
from hipwizard.workspace import Workspace


async def test_home_lists_four_steps_with_state_words(tmp_path):
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = " ".join(str(c.render()) for c in app.screen.query(".step-card"))
        for spec in STEPS:
            assert spec.title in text
        assert "not started" in text or "not in this build" in text


async def test_help_screen_lists_keys_of_current_screen(tmp_path):
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        descs = [d for _k, d in app.screen._rows]
        assert "Doctor" in descs and "Quit" in descs
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


async def test_open_step_by_key_and_mouse_and_resume(tmp_path):
    spec = STEPS[0]
    ws = Workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press(str(spec.number))
        await pilot.pause()
        assert type(app.screen).__name__ == spec.screen.split(":")[1]
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.click(f"#step-{spec.key}")
        await pilot.pause()
        assert type(app.screen).__name__ == spec.screen.split(":")[1]
    assert ws.read_state("workspace")["last_screen"] == spec.key
    app2 = HipwizardApp(ws)
    async with app2.run_test(size=(120, 45)) as pilot:
        await pilot.pause()
        assert type(app2.screen).__name__ == spec.screen.split(":")[1]


def test_snapshot_home_demo_workspace(snap_compare, monkeypatch):
    """The home screen of the embedded demo (a fixed path, so the frame is the same on every machine)."""
    import shutil

    from hipwizard.demo_workspace import prepare_demo_workspace

    root = "/tmp/hipwizard-snapshot"
    shutil.rmtree(root, ignore_errors=True)
    monkeypatch.setenv("HIPWIZARD_CACHE", root)
    ws = prepare_demo_workspace()

    async def settle(pilot):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(HipwizardApp(ws, resume=False), terminal_size=(110, 34), run_before=settle)


async def test_command_palette_opens_a_step(tmp_path):
    from textual.command import CommandPalette

    spec = STEPS[0]
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*f"Step {spec.number}")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.5)
        assert type(app.screen).__name__ == spec.screen.split(":")[1]
