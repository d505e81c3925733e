"""Train screen: the live run view driven by recorded real logs replayed at speed, stop, quit and re-attach."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from textual.widgets import Input

from hipwizard.gpu import GpuTelemetry
from hipwizard.runner import RunResult
from hipwizard.train.run.launcher import LaunchOptions, launch
from hipwizard.train.run.runs import run_info
from hipwizard.train.run.snapshot import HostSample
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.messages import RunUpdated
from hipwizard.tui.train.dialogs import ConfirmAction
from hipwizard.tui.train.plan import TrainPlanPane
from hipwizard.tui.train.run_view import RunView
from hipwizard.tui.train.screen import TrainScreen
from hipwizard.workspace import Workspace
from tests.train.plan_fixtures import recipe_dir
from tests.tui.waiting import eventually, until

HERE = Path(__file__).parent
LF = HERE.parent / "fixtures" / "llamafactory"
GPU = HERE.parent / "fixtures" / "rocm"
GIB = 1024 ** 3


class RecordedRocmSmi:
    """Runner answering rocm-smi with the recorded partitioned MI300X (QPX) output; nothing else exists."""

    def which(self, name):
        return name if name == "rocm-smi" else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        if argv[0] != "rocm-smi":
            return RunResult(tuple(argv), "missing")
        text = (GPU / "rocm-smi-partitioned-MI300X-MI300A-ROCm-ROCm-4750.txt").read_text()
        block = text.split("## MI300X QPX mode\n", 1)[1].split("$ rocm-smi --showmeminfo vram\n", 1)[1]
        return RunResult(tuple(argv), "ok", 0, block)


def fixed_host() -> HostSample:
    return HostSample(12.0, 8 * GIB, 64 * GIB)


def replay_cli(folder: Path, name: str, trainer: str, stdout: str, *, code: int = 0, delay: float = 0.02,
               hold: float = 0.0) -> str:
    """A stand-in for llamafactory-cli that replays a recorded run's logs (see replay_run.py)."""
    trainer_path = str(LF / trainer) if trainer != "-" else "-"
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / f"{name}-replay.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'replay_run.py'} {trainer_path} {LF / stdout} "
                       f"{delay} {code} {hold}\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def replayed(ws: Workspace, name: str, trainer: str, stdout: str, *, code: int = 0, delay: float = 0.02,
             hold: float = 0.0) -> str:
    """Launch, through the real launcher, a process that replays a recorded run's logs."""
    run_dir = ws.runs_dir / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("output_dir: output\nper_device_train_batch_size: 1\n")
    cli = replay_cli(ws.runs_dir, name, trainer, stdout, code=code, delay=delay, hold=hold)
    return launch(run_dir, LaunchOptions(platform="cpu", llamafactory_cli=cli)).run_dir


def make_app(ws: Workspace, attach: str | None = None) -> tuple[HipwizardApp, TrainScreen]:
    app = HipwizardApp(ws, resume=False)
    screen = TrainScreen(telemetry=GpuTelemetry(RecordedRocmSmi(), order=("amd-smi", "rocm-smi")),
                         host_probe=fixed_host, poll_s=0.05, attach=attach)
    return app, screen


def _view(app) -> RunView:
    return app.screen.query_one(RunView)


def _finished(app, state="finished", steps=None):
    v = _view(app)
    return v.snap is not None and v.snap.state == state and (steps is None or v.snap.step == steps)


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return Workspace(tmp_path / "ws")


@pytest.mark.slow
async def test_live_view_follows_a_replayed_run(ws):
    app, screen = make_app(ws)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.push_screen(screen)
        # launched once the screen is up, so the view sees the run from its first step
        run_dir = replayed(ws, "lora-8b", "trainer_log-8b-lora-plain-h200.jsonl", "stdout-8b-lora-plain-h200.log",
                           delay=0.3)
        _view(app).attach(run_dir)
        seen = []
        await until(pilot, lambda: (seen.append(len(_view(app).snap.loss)) if _view(app).snap else None) or
                    _finished(app, steps=12), timeout=40)
        snap = _view(app).snap
        assert min(seen) < 12 and len(set(seen)) >= 2  # the view moved while the run was going
        assert [x for x, _ in snap.loss] == list(range(1, 13)) and len(snap.lr) == 12
        assert snap.tokens_per_s > snap.tokens_per_s_avg
        assert snap.gpu.source == "rocm-smi" and len(snap.gpu.samples) == 4
        assert snap.grad_norm == pytest.approx(0.3656)
        status = str(app.screen.query_one("#run-status").render())
        assert status.startswith("✔ finished") and "lora-8b" in status


@pytest.mark.slow
async def test_failed_run_shows_cause_and_field(ws):
    run_dir = replayed(ws, "bad-key", "-", "stdout-reject-bad_key-cpu.log", code=1)
    app, screen = make_app(ws, attach=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _finished(app, "failed"))
        text = str(app.screen.query_one("#run-failure").render())
        assert "✖ cause: LLaMA-Factory does not know the option(s) bogus_key" in text and "look at bogus_key" in text
        log = app.screen.query_one("#run-log")
        assert any("✖ ValueError: Some keys are not used" in str(line.text) for line in log.lines)


@pytest.mark.slow
async def test_stop_runs_in_the_background_and_leaves_nothing(ws):
    run_dir = replayed(ws, "long", "trainer_log-demo-lora-cpu.jsonl", "stdout-demo-lora-cpu.log", hold=120)
    app, screen = make_app(ws, attach=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _view(app).snap is not None and _view(app).snap.step == 8)
        from hipwizard.train.run.manifest import load_manifest
        from hipwizard.train.run.stop import run_processes

        tree = set(run_processes(load_manifest(run_dir)))
        await pilot.press("X")
        assert isinstance(app.screen, ConfirmAction)  # stopping asks first
        await pilot.press("y")
        # the stop runs in a thread worker: the key handler returned while it was under way
        assert _view(app).stopping or _view(app).snap.state == "stopped"
        assert "◌ stopping" in str(app.screen.query_one("#run-status").render()) or _view(app).snap.state != "running"
        await until(pilot, lambda: _finished(app, "stopped"), timeout=90)
        assert "■ stopped" in str(app.screen.query_one("#run-status").render())
    import psutil

    assert [pid for pid in tree if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"] == []
    assert run_info(run_dir).state == "stopped"


def test_coalescing_drops_a_pending_older_snapshot():
    from hipwizard.train.run.snapshot import RunSnapshot

    a, b = RunUpdated(RunSnapshot("x", "running", ""), 1), RunUpdated(RunSnapshot("x", "running", ""), 1)
    assert b.can_replace(a)


@pytest.mark.slow
async def test_quit_mid_run_then_reattach_shows_the_whole_history(ws, demo_assets):
    """Real llamafactory-cli (tiny model, CPU): quit the app mid-run; the run goes on; a new app sees it all."""
    from hipwizard.train.demo import write_demo_run_dir
    from hipwizard.train.run.manifest import load_manifest
    from hipwizard.train.run.runs import is_running

    run_dir = write_demo_run_dir(ws.runs_dir, demo_assets.root, max_steps=10, name="demo-reattach")
    m = launch(run_dir, LaunchOptions(platform="cpu", extra_env={"DISABLE_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1"}))
    app, screen = make_app(ws, attach=m.run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _view(app).snap is not None and len(_view(app).snap.loss) >= 2, timeout=120)
        seen_before_quit = len(_view(app).snap.loss)
    assert seen_before_quit < 10 and is_running(load_manifest(run_dir))  # quitting did not stop training
    eventually(lambda: run_info(run_dir).state != "running", timeout=120)
    app2, screen2 = make_app(ws, attach=m.run_dir)
    async with app2.run_test(size=(160, 48)) as pilot:
        await app2.push_screen(screen2)
        await until(pilot, lambda: _finished(app2, steps=10), timeout=30)
        assert [x for x, _ in _view(app2).snap.loss] == list(range(1, 11))


def _log_at_end(app) -> bool:
    """The run's log shows its newest line (it follows the run; a layout change must not leave it behind)."""
    log = app.screen.query_one("#run-log")
    return log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y


def _snapshot_ready(app, state):
    v = _view(app)
    return v.snap is not None and v.snap.state == state and v.snap.gpu is not None


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_snapshot_finished_run(ws, snap_compare, size):
    run_dir = replayed(ws, "lora-8b", "trainer_log-8b-lora-plain-h200.jsonl", "stdout-8b-lora-plain-h200.log",
                       delay=0.0)
    app, screen = make_app(ws, attach=run_dir)

    async def ready(pilot):
        app.sub_title = "snapshot"
        await app.push_screen(screen)
        await until(pilot, lambda: _snapshot_ready(app, "finished") and len(_view(app).runs) == 1)
        await until(pilot, lambda: _log_at_end(app))
        await _drawn(pilot)

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_snapshot_failed_run(ws, snap_compare, size):
    run_dir = replayed(ws, "bad-key", "-", "stdout-reject-bad_key-cpu.log", code=1)
    app, screen = make_app(ws, attach=run_dir)

    async def ready(pilot):
        app.sub_title = "snapshot"
        await app.push_screen(screen)
        await until(pilot, lambda: _snapshot_ready(app, "failed") and len(_view(app).runs) == 1)
        # the state can be known before the log's last lines are drawn: wait for the traceback's last line
        await until(pilot, lambda: any("Some keys are not used" in line.text
                                       for line in app.screen.query_one("#run-log").lines) and _log_at_end(app))
        await _drawn(pilot)

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_snapshot_plan_tab(tmp_path, snap_compare, size):
    """The Plan tab on the NVIDIA recipe preset, the model field focused (at 80 columns only the focused field's
    help shows, naming its YAML key)."""
    app, screen = make_app(Workspace(recipe_dir(tmp_path)))

    async def ready(pilot):
        from hipwizard.tui.train.plan import TrainPlanPane

        app.sub_title = "snapshot"
        await app.push_screen(screen)
        pane = screen.query_one(TrainPlanPane)
        await until(pilot, lambda: pane.plan is not None and "Validation" in str(pane.query_one("#plan-issues").render()))
        screen.query_one("#plan-name", Input).value = "recipe"  # deterministic (the default has a timestamp)
        field = screen.query_one("#in-model_name_or_path", Input)
        field.cursor_blink = False  # a blinking cursor would make the picture depend on timing
        field.focus()
        await _planned(pilot, screen)
        await _drawn(pilot)

    assert snap_compare(app, terminal_size=size, run_before=ready)


# --- keys: launch and stop ask first ---------------------------------------------------------------
@pytest.fixture
def fake_launch(monkeypatch, tmp_path):
    """services.launch with the replaying stand-in for llamafactory-cli (what both faces call, through the
    door; launch_demo calls it inside services)."""
    from hipwizard import train
    from hipwizard.train import services

    real = services.launch
    calls = []

    def launch_replaying(ws, target, options=None, *, progress=None):
        calls.append(str(target))
        cli = replay_cli(tmp_path / "cli", "demo", "trainer_log-demo-lora-cpu.jsonl", "stdout-demo-lora-cpu.log",
                         delay=0.0)
        options = options or LaunchOptions()
        options.llamafactory_cli, options.platform = cli, "cpu"
        return real(ws, target, options, progress=progress)

    monkeypatch.setattr(services, "launch", launch_replaying)
    monkeypatch.setattr(train, "launch", launch_replaying)
    return calls


@pytest.mark.slow
async def test_x_asks_before_launching_the_highlighted_run_dir(ws, fake_launch):
    import yaml

    from hipwizard.train.state import load
    from tests.train.helpers import launchable_values

    planned = ws.runs_dir / "planned"
    planned.mkdir(parents=True)
    # a config the pre-launch check accepts: launch refuses an unlaunchable one before asking (issue 14)
    (planned / "config.yaml").write_text(yaml.safe_dump(launchable_values(ws.root / "files")))
    app, screen = make_app(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(screen)
        app.screen.query_one("#train-tabs").active = "run"
        await until(pilot, lambda: len(_view(app).runs) == 1)
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmAction) and "Launch planned?" in str(
            app.screen.query_one("#confirm-text").render())
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmAction))
        assert fake_launch == [] and not (planned / "run.json").exists()
        await pilot.press("x", "y")
        await until(pilot, lambda: _finished(app, steps=8))
        assert fake_launch == [str(planned.resolve())]
        assert _view(app).attached == str(planned.resolve()) == load(ws).last_run


@pytest.mark.slow
async def test_x_on_the_plan_tab_saves_the_plan_then_launches_it(tmp_path, fake_launch):
    ws = Workspace(recipe_dir(tmp_path))
    app, screen = make_app(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(screen)
        await _planned(pilot, screen)
        screen.query_one("#plan-name", Input).value = "recipe"
        await _planned(pilot, screen)
        screen.set_focus(None)  # keys typed into a field are text, not commands
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmAction)
        assert "Save the plan as recipe and launch it?" in str(app.screen.query_one("#confirm-text").render())
        await pilot.press("y")
        run_dir = ws.runs_dir / "recipe"
        await until(pilot, lambda: _view(app).attached == str(run_dir.resolve()))
        assert (run_dir / "config.yaml").is_file() and (run_dir / "ds_config.json").is_file()
        assert fake_launch == [str(run_dir.resolve())]
        assert screen.query_one("#train-tabs").active == "run"


async def test_run_tab_keys_are_hidden_on_the_plan_tab(ws):
    app, screen = make_app(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(screen)
        screen.set_focus(None)
        await until(pilot, lambda: {"x", "D"} <= _enabled_keys(screen))
        assert not {"X", "o", "r"} & _enabled_keys(screen)
        screen.query_one("#train-tabs").active = "run"
        await until(pilot, lambda: {"x", "D", "X", "o", "r"} <= _enabled_keys(screen))


@pytest.mark.slow
async def test_D_runs_the_demo_preset_from_either_tab(ws, fake_launch, monkeypatch, tmp_path, demo_assets):
    import yaml

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "demo-v1").symlink_to(demo_assets.root)  # the session's built demo, where the service looks
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    app, screen = make_app(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(screen)
        screen.set_focus(None)
        await pilot.press("D")  # no confirmation: the demo is a short CPU job in a new run dir
        assert screen.query_one("#train-tabs").active == "run"
        await until(pilot, lambda: _finished(app, steps=8))
        run_dir = _view(app).attached
        assert fake_launch == [run_dir] and run_dir.startswith(str(ws.runs_dir.resolve() / "demo-lora-"))
        cfg = yaml.safe_load((Path(run_dir) / "config.yaml").read_text())
        assert (cfg["lora_rank"], cfg["cutoff_len"], cfg["max_steps"]) == (8, 256, 8)
        assert not _view(app).launching and not screen.query_one("#run-job").display


@pytest.mark.slow
async def test_plan_tab_keys_work_on_entering_the_screen(ws):
    """Entering Train shows the Plan tab with focus on none of its fields: its keys act there (they used
    to answer that they "work on Train (Plan tab)" — where the user was)."""
    from hipwizard.tui.train.dialogs import CalibrateDialog

    app, screen = make_app(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(screen)
        screen.set_focus(None)
        await _planned(pilot, screen)
        await app.workers.wait_for_complete()
        assert screen.query_one("#train-tabs").active == "plan" and app.focused is None
        await pilot.press("C")  # calibrate: asks how many candidates and steps first
        await until(pilot, lambda: isinstance(app.screen, CalibrateDialog), timeout=10)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, timeout=10)
        screen.set_focus(None)
        await pilot.press("ctrl+s")  # save the plan as a run directory: the Run tab shows it
        await until(pilot, lambda: any(ws.runs_dir.glob("*/config.yaml")), timeout=10)
        assert screen.query_one("#train-tabs").active == "run"


def _enabled_keys(screen) -> set[str]:
    """The keys the screen itself binds that are enabled now."""
    return {b.binding.key for b in screen.active_bindings.values() if b.enabled and b.node is screen}


async def _planned(pilot, screen) -> None:
    """Until the Plan tab shows the plan of its last edit (mounted, debounce fired, job answered)."""
    await until(pilot, lambda: screen.is_mounted and screen.query(TrainPlanPane)
                and not screen.query_one(TrainPlanPane).replan_pending)
    await pilot.app.workers.wait_for_complete()


async def _drawn(pilot) -> None:
    """Until what is pending is drawn: scheduled animations and the message queue (no fixed pause)."""
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
