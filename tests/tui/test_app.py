"""Pilot tests of the app shell: steps reachable by key and mouse, help, palette, resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipwizard.doctor.probe.replay import ReplayRunner
from hipwizard.port.state import record_link
from hipwizard.steps import STEPS
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.help_screen import HelpScreen
from hipwizard.tui.home import HomeScreen, StepCard
from hipwizard.workspace import Workspace
from tests.tui.waiting import until

DOCTOR_ENVS = Path(__file__).parent.parent / "fixtures" / "doctor"


async def test_home_lists_four_steps_with_state_words(tmp_path):
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = " ".join(c.text for c in app.screen.query(StepCard))
        for spec in STEPS:
            assert spec.title in text
        assert "not started" in text or "not in this build" in text


async def test_help_screen_lists_keys_of_current_screen(tmp_path):
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        here = {r.does: r.keys for r in app.screen.rows}
        everywhere = {r.does: r.keys for r in app.screen.everywhere}
        assert here["Next step"] == "g" and here["Down"] == "↓ j" and "Open step" in here
        assert "Quit" in everywhere and everywhere["Help"] == "?" and everywhere["Home"] == "h"
        for spec in STEPS:
            assert everywhere[f"Step {spec.number}: {spec.title}"] == str(spec.number)
        assert "Next step" not in everywhere  # the screen's own g is listed once, under the screen
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


@pytest.mark.slow
async def test_help_on_a_step_screen_lists_its_verbs_and_the_global_keys_only(tmp_path):
    from hipwizard.tui.keys import VERBS

    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(DOCTOR_ENVS / "mi300x-8x-rocm62")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await app.workers.wait_for_complete()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and app.screen.title_text == "Doctor"
        here = {r.does: r.keys for r in app.screen.rows}
        everywhere = {r.does: r.keys for r in app.screen.everywhere}
        assert here == {"Re-run checks": "r", "Copy report": "c", "Paste outputs": "p", "Down": "j", "Up": "k"}
        assert everywhere["Next step"] == "g" and everywhere["Step 4: Train"] == "4"
        # The hidden explain bindings of the app are no rows: no verb of another screen is listed.
        listed = " ".join(list(here.values()) + list(everywhere.values())).split()
        assert not {"y", "x", "w", "D", "t"} & set(listed)
        assert len(everywhere) < len(VERBS)


@pytest.mark.slow
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


def _demo_home(monkeypatch) -> HipwizardApp:
    """The home screen of the embedded demo (a fixed path, so the frame is the same on every machine)."""
    import shutil

    from hipwizard.demo_workspace import prepare_demo_workspace

    root = "/tmp/hipwizard-snapshot"
    shutil.rmtree(root, ignore_errors=True)
    monkeypatch.setenv("HIPWIZARD_CACHE", root)
    return HipwizardApp(prepare_demo_workspace(), resume=False)


async def _settle(pilot):
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_snapshot_home_demo_workspace_80x24(snap_compare, monkeypatch):
    """80x24 (an SSH window): four two-line cards, the suggested next step and the footer all show."""
    assert snap_compare(_demo_home(monkeypatch), terminal_size=(80, 24), run_before=_settle)


def test_snapshot_home_demo_workspace_160x45(snap_compare, monkeypatch):
    assert snap_compare(_demo_home(monkeypatch), terminal_size=(160, 45), run_before=_settle)


async def test_home_at_80x24_shows_every_card_and_the_next_step(tmp_path, monkeypatch):
    app = _demo_home(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert screen.has_class("-short")
        for card in screen.query(StepCard):
            top, bottom = card.region.y, card.region.bottom
            assert 1 <= top and bottom <= 23, card.id  # between the header and the footer
            assert card.spec.blurb not in card.text and len(card.text.splitlines()) == 2
        assert screen.query_one("#next-line").region.bottom <= 23
        assert screen.query_one("#home").max_scroll_y == 0


@pytest.mark.slow
async def test_command_palette_opens_a_step(tmp_path):
    from textual.command import CommandList, CommandPalette

    spec = STEPS[0]
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*f"Step {spec.number}")
        results = app.screen.query_one(CommandList)
        await until(pilot, lambda: results.option_count > 0 and results.highlighted is not None
                    and f"Step {spec.number}" in str(results.get_option_at_index(results.highlighted).prompt))
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == spec.screen.split(":")[1])


def _reviewing(tmp_path) -> Workspace:
    """A workspace with a port under review: the Port screen opens on its hunks, not on the setup form
    (whose text fields take digits and letters as text)."""
    from tests.port.review_factory import new_review

    review = new_review(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    return ws


@pytest.mark.slow
async def test_digits_open_a_step_from_any_step_screen(tmp_path):
    app = HipwizardApp(_reviewing(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(DOCTOR_ENVS / "nogpu-debian")
    async with app.run_test(size=(120, 45)) as pilot:
        for digit in ("1", "3", "2", "4", "1"):
            await pilot.press(digit)
            await pilot.pause()
            spec = STEPS[int(digit) - 1]
            assert getattr(app.screen, "step_key", None) == spec.key
            assert len(app.screen_stack) == 2  # home and one step: going to a step replaces the last
        await app.workers.wait_for_complete()


@pytest.mark.slow
async def test_a_verb_key_not_bound_here_says_where_it_works(tmp_path):
    app = HipwizardApp(_reviewing(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(DOCTOR_ENVS / "nogpu-debian")
    said: list[str] = []
    app.notify = lambda message, **_kw: said.append(str(message))
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("1")
        await app.workers.wait_for_complete()
        await pilot.press("y")
        await pilot.pause()
        assert said[-1] == "y (accept the hunk) does nothing on Doctor; it works on Port."
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        assert said[-1].startswith("x (launch the planned run (asks to confirm)) does nothing on Port")
        assert said[-1].endswith("it works on Train.")
        await pilot.press("h", "c")
        await pilot.pause()
        assert said[-1].startswith("c (copy the report) does nothing on Home; it works on Doctor")


async def test_g_opens_the_next_step_from_any_screen(tmp_path):
    from hipwizard.doctor import services

    ws = Workspace(tmp_path)
    services.diagnose(ws, services.open_source(replay=DOCTOR_ENVS / "mi300x-8x-rocm62"))  # doctor: done
    app = HipwizardApp(ws, resume=False)
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert app.screen.step_key == "parity"
        await pilot.press("g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.step_key == "port"
        await pilot.press("h")
        await _settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert app.screen.step_key == "port"
