"""Pilot tests and SVG snapshots of the Doctor screen, on replayed real outputs (deterministic frames)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList, Static

from hipwizard.doctor.probe.replay import ReplayRunner
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.doctor.screen import DoctorScreen
from hipwizard.workspace import Workspace
from tests.tui.waiting import until

ENVS = Path(__file__).parent.parent / "fixtures" / "doctor"


def _app(tmp_path, env: str) -> HipwizardApp:
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(ENVS / env)
    return app


async def _open_doctor(pilot) -> DoctorScreen:
    await pilot.press("1")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, DoctorScreen)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    return screen


def _text(widget: Static) -> str:
    return str(widget.render())


async def test_first_frame_says_probing_before_any_probe_answers(tmp_path):
    import threading

    release = threading.Event()

    class HeldReplay(ReplayRunner):  # every tool "hangs" until the test lets go
        def run(self, argv, **kw):
            release.wait(10)
            return super().run(argv, **kw)

    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = HeldReplay(ENVS / "mi300x-8x-rocm62")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await pilot.pause()
        screen = app.screen
        assert "probing" in _text(screen.query_one("#doctor-summary", Static))
        assert screen.report is None
        await pilot.press("c")  # nothing to copy yet: a warning, not a crash
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.report is not None


async def test_leaving_or_quitting_never_waits_for_a_hung_tool(tmp_path):
    import threading
    import time

    never = threading.Event()

    class HungReplay(ReplayRunner):  # every tool hangs (for a minute: longer than any test may take)
        def run(self, argv, **kw):
            never.wait(60)
            return super().run(argv, **kw)

    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = HungReplay(ENVS / "mi300x-8x-rocm62")
    started = time.monotonic()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await pilot.pause()
        assert any(t.name == "job diagnose" and t.daemon for t in threading.enumerate())
        await pilot.press("h")  # leave the screen mid-probe
        await pilot.pause()
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("q")
    assert time.monotonic() - started < 20
    never.set()


async def test_progress_counts_the_tools_that_answered(tmp_path):
    import threading

    gate = threading.Semaphore(0)

    class OneAtATime(ReplayRunner):
        def run(self, argv, **kw):
            gate.acquire(timeout=10)
            return super().run(argv, **kw)

    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = OneAtATime(ENVS / "mi300x-8x-rocm62")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await pilot.pause()
        gate.release()
        summary = app.screen.query_one("#doctor-summary", Static)
        await until(pilot, lambda: "1 of" in _text(summary), timeout=10)
        assert "tools answered, last:" in _text(summary)
        for _ in range(40):
            gate.release()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.report is not None


async def test_checklist_has_symbols_and_words_and_details_follow_selection(tmp_path):
    app = _app(tmp_path, "nogpu-debian")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_doctor(pilot)
        checks = screen.query_one("#doctor-checks", OptionList)
        prompts = [str(checks.get_option_at_index(i).prompt) for i in range(checks.option_count)]
        assert prompts[0].startswith("✖ fail GPU")
        assert any(p.startswith("– n/a") for p in prompts) and any(p.startswith("✔ ok") for p in prompts)
        detail = _text(screen.query_one("#doctor-detail", Static))
        assert "Found" in detail and "Why it matters" in detail and "Fix" in detail
        await pilot.press("down", "down")
        await pilot.pause()
        assert "ROCm" in _text(screen.query_one("#doctor-detail", Static))
        assert "fail" in _text(screen.query_one("#doctor-summary", Static))
    assert Workspace(tmp_path).step_status("doctor").state == "attention"


async def test_rerun_and_copy_report(tmp_path):
    app = _app(tmp_path, "mi300x-8x-rocm62")
    copied: list[str] = []
    app.copy_to_clipboard = copied.append
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_doctor(pilot)
        first = screen.report
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.report is not first and screen.report.summary() == first.summary()
        await pilot.press("c")
        await pilot.pause()
    saved = tmp_path / ".hipwizard" / "doctor-report.txt"
    assert copied and copied[0] == saved.read_text()
    assert "✔ ok   GPU: 8 × AMD Instinct MI300X" in copied[0]
    assert Workspace(tmp_path).step_status("doctor").state == "done"


async def test_demo_note_is_shown(tmp_path):
    from hipwizard.doctor.demo import prepare

    ws = Workspace(tmp_path)
    prepare(ws)
    app = HipwizardApp(ws, resume=False)
    app.doctor_runner = ReplayRunner(ENVS / "nogpu-debian")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_doctor(pilot)
        assert "what it lacks for an MI300X fine-tune" in _text(screen.query_one("#doctor-note", Static))
    assert ws.step_status("doctor").state == "attention"


def _snap_before(tmp_path, env):
    async def run_before(pilot):
        pilot.app.sub_title = "snapshot workspace"
        await pilot.press("1")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    return run_before


def test_snapshot_mi300x_ready(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path, "mi300x-8x-rocm62"), terminal_size=(130, 40),
                        run_before=_snap_before(tmp_path, "mi300x-8x-rocm62"))


def test_snapshot_no_gpu_machine(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path, "nogpu-debian"), terminal_size=(130, 40),
                        run_before=_snap_before(tmp_path, "nogpu-debian"))


def test_snapshot_mi300x_80x24(snap_compare, tmp_path):
    """80x24: the whole checklist and the selected check's details, the footer's keys."""
    assert snap_compare(_app(tmp_path, "mi300x-8x-rocm62"), terminal_size=(80, 24),
                        run_before=_snap_before(tmp_path, "mi300x-8x-rocm62"))


def test_snapshot_mi300x_160x45(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path, "mi300x-8x-rocm62"), terminal_size=(160, 45),
                        run_before=_snap_before(tmp_path, "mi300x-8x-rocm62"))


async def test_at_80x24_every_check_is_on_screen(tmp_path):
    app = _app(tmp_path, "mi300x-8x-rocm62")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_doctor(pilot)
        checks = screen.query_one("#doctor-checks", OptionList)
        assert checks.max_scroll_y == 0 and checks.option_count == len(screen.report.checks)
        assert screen.query_one("#doctor-detail-box").region.width >= 36
