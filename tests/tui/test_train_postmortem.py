"""Pilot: P on the Run tab of a run with a grad_norm spike (a recorded real run of the tiny demo model whose
gradients were scaled 1000x at step 5, tests/fixtures/report/run-spike) rebuilds step 5's batch through the
real LLaMA-Factory trainer in a subprocess, compares the model on it, and opens Parity on the result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.train.state import remember_run
from hipwizard.tui.parity.screen import ParityScreen
from hipwizard.workspace import Workspace
from tests.tui.test_train_screen import _view, make_app
from tests.tui.waiting import notifications, until

SPIKE = Path(__file__).resolve().parent.parent / "fixtures" / "report" / "run-spike"


def _copy_run(ws: Workspace, demo_root: Path) -> Path:
    run = ws.runs_dir / "demo-lora-spike"
    shutil.copytree(SPIKE, run)
    manifest = json.loads((run / "run.json").read_text())
    manifest.update(run_dir=str(run), cwd=str(run), output_dir=str(run / "output"))
    (run / "run.json").write_text(json.dumps(manifest))
    config = (run / "config.yaml").read_text()
    for key, value in (("model_name_or_path", demo_root / "model"), ("dataset_dir", demo_root / "data")):
        config = "\n".join(f"{key}: {value}" if ln.startswith(f"{key}:") else ln for ln in config.splitlines()) + "\n"
    (run / "config.yaml").write_text(config)
    remember_run(ws, run)
    return run


@pytest.mark.slow
async def test_p_runs_the_postmortem_of_the_spike_and_opens_parity(tmp_path, demo_assets, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DISABLE_VERSION_CHECK", "1")
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    run = _copy_run(ws, Path(demo_assets.root))
    app, screen = make_app(ws, attach=str(run))
    async with app.run_test(size=(140, 40)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _view(app).snap is not None and _view(app).snap.state == "finished")
        assert any("step 5" in line and "grad_norm" in line for line in _view(app).snap.alarms)
        assert app.screen.check_action("run", ("postmortem",)) is True  # P shows in the footer
        await pilot.press("P")
        await until(pilot, lambda: isinstance(app.screen, ParityScreen), timeout=300)
        await until(pilot, lambda: app.screen.comparison is not None)  # mounted, showing the post-mortem
        assert "backward" in str(app.screen.query_one("#parity-headline").render())
    saved = json.loads((ws.state_dir / "parity.json").read_text())["comparisons"][-1]
    assert saved["label"] == "post-mortem demo-lora-spike step 5 · base weights" and saved["verdict"] == "pass"
    assert (ws.state_dir / "parity" / "step-batch-demo-lora-spike-5.safetensors").is_file()


@pytest.mark.slow
async def test_p_without_an_alarm_says_how_to_name_a_step(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    run = ws.runs_dir / "demo-lora"
    shutil.copytree(SPIKE.parent / "run-demo-lora", run)
    manifest = json.loads((run / "run.json").read_text())
    manifest.update(run_dir=str(run), cwd=str(run), output_dir=str(run / "output"))
    (run / "run.json").write_text(json.dumps(manifest))
    app, screen = make_app(ws, attach=str(run))
    async with app.run_test(size=(140, 40)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _view(app).snap is not None and _view(app).snap.state == "finished")
        await pilot.press("P")
        await until(pilot, lambda: any("--step N" in n for n in notifications(app)), timeout=10)
        assert not isinstance(app.screen, ParityScreen)
        assert app.screen.check_action("run", ("postmortem",)) is False  # not in the footer without an alarm
