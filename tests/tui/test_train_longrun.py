"""The Run tab on long runs: a stalled run's alarm and incident, R and N on an ended run, the panel's words."""

from __future__ import annotations

import pytest

from hipwizard.train.run.classify import Diagnosis
from hipwizard.train.run.launcher import LaunchOptions, launch
from hipwizard.train.run.snapshot import RunSnapshot
from hipwizard.train.run.stall import StallPolicy
from hipwizard.tui.train.dialogs import ConfirmAction
from hipwizard.tui.train.run_panels import failure_text, status_text
from tests.tui.test_train_screen import _view, make_app, replay_cli
from tests.tui.waiting import notifications, until


def test_the_panel_names_the_stall_the_incident_and_the_keys():
    d = Diagnosis("collective-timeout", "a collective timed out", "run again with NCCL_DEBUG=INFO",
                  ["log: RuntimeError: ... Timed out waiting 20000ms for send operation to complete",
                   "stack 42 (stopped): all_gather (torch/distributed/distributed_c10d.py:5046)"])
    snap = RunSnapshot("r", "stalled", "", stall="no new step for 9 s after step 4 (threshold 6 s: ...)", incident=d)
    text = failure_text(snap).plain
    assert text.startswith("⏸ STALLED: no new step for 9 s")
    assert "✖ incident: collective-timeout: a collective timed out" in text and "stack 42 (stopped)" in text
    assert "R resumes" in text and "N runs again with NCCL_DEBUG=INFO" in text
    assert status_text(snap).plain.startswith("⏸ stalled")  # a symbol and a word, not colour alone
    assert failure_text(RunSnapshot("r", "running", "")) is None


@pytest.mark.slow
async def test_a_run_that_stops_logging_turns_stalled_with_an_alarm_then_stop_and_resume(tmp_path):
    from hipwizard.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    run_dir = ws.runs_dir / "hangs"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("output_dir: output\nper_device_train_batch_size: 1\n")
    cli = replay_cli(ws.runs_dir, "hangs", "trainer_log-demo-lora-cpu.jsonl", "stdout-demo-lora-cpu.log",
                     delay=0.2, hold=300)
    launch(run_dir, LaunchOptions(platform="cpu", llamafactory_cli=cli, stall=StallPolicy(k=3.0, floor_s=2.0)))
    app, screen = make_app(ws, attach=str(run_dir))
    async with app.run_test(size=(160, 48)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: _view(app).snap is not None and _view(app).snap.state == "stalled", timeout=60)
        # the alarm stays on screen (a notice is posted as a message: it lands a moment after the state)
        await until(pilot, lambda: "STALLED" in "\n".join(notifications(app)), timeout=10)
        await until(pilot, lambda: _view(app).snap.incident is not None, timeout=60)
        box = str(app.screen.query_one("#run-failure").render())
        assert "⏸ STALLED: no new step" in box and "incident: stalled" in box, box
        assert str(app.screen.query_one("#run-status").render()).startswith("⏸ stalled")
        await pilot.press("R")  # hidden while it cannot act: nothing opens
        assert not isinstance(app.screen, ConfirmAction)
        await pilot.press("X")
        await pilot.press("y")
        await until(pilot, lambda: _view(app).snap.state == "stopped", timeout=90)
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmAction)
        await pilot.press("y")
        await until(pilot, lambda: "no complete checkpoint" in "\n".join(notifications(app)),
                    timeout=30)
    assert (run_dir / "incident.txt").read_text().count("== Python stacks") == 1
