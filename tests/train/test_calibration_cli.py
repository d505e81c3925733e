"""`hipwizard train calibrate` through the real CLI (a subprocess, as a user runs it) on the tiny demo model on
CPU: 2 candidates x 8 real steps through the launcher (start-up and one checkpoint timed); the calibration is
kept and `train plan` then labels its numbers measured here / calibrated here; bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hipwizard.cli.train_calibrate import render_calibration
from hipwizard.train import state
from hipwizard.train.calibration.measure import save_span
from hipwizard.train.run.manifest import load_manifest
from hipwizard.train.run.stop import run_processes
from hipwizard.workspace import Workspace

from .helpers import LF_ENV


def hipwizard(*argv, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, **LF_ENV}
    return subprocess.run([sys.executable, "-m", "hipwizard", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture
def demo_config(tmp_path, demo_assets):
    from hipwizard.train.demo import write_demo_run_dir

    return write_demo_run_dir(tmp_path / "src", demo_assets.root, name="demo") / "config.yaml"


@pytest.mark.slow
def test_calibrate_two_candidates_eight_steps_then_plan_labels_measured_and_calibrated(tmp_path, demo_config):
    """Also issue 33 item 4: each run times its start-up and one checkpoint (save_steps 5 of 8, two warm-up
    steps), and `train plan` of the demo (max_steps 8) ranks the planned run with them, saying measured here."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = hipwizard("train", "calibrate", demo_config, "--candidates", 2, "--steps", 8, "--warmup", 2,
                     "--platform", "cpu", "--workspace", ws, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    assert [m["ok"] for m in printed["measurements"]] == [True, True]
    assert [m["steps"] for m in printed["measurements"]] == [8, 8]
    for m in printed["measurements"]:  # launch -> model load -> first step takes seconds even for the tiny model
        assert 1.0 < m["first_step_s"] < m["wall_s"] and 0.5 < m["startup_s"] < m["wall_s"], m
        assert m["checkpoint_step"] == 5 and m["checkpoint_s"] is not None and m["checkpoint_s"] >= 0, m
        run = Path(m["run_dir"])  # the save really happened in the run: its log line, its files
        written = save_span(run / "output" / "checkpoint-5", run / "train.log")
        assert written is not None and m["checkpoint_s"] >= written, (m, written)
        assert (Path(m["run_dir"]) / "config.yaml").read_text().count("save_steps: 5") == 1
    assert printed["measurements"] and all(m["step_s"] > 0 and m["tokens_per_s"] > 0 for m in printed["measurements"])
    (cal,) = state.calibrations(Workspace(ws))
    assert len(cal.good) == 2 and not cal.stopped and cal.key["world_size"] == 1
    assert cal.environment["id"] and cal.environment["origin"] == "no doctor report"  # stamped (issue 19)
    for m in cal.measurements:  # each candidate's run ended with its process group
        manifest = load_manifest(m.run_dir)
        assert manifest is not None and not run_processes(manifest)

    plan = hipwizard("train", "plan", demo_config, "--workspace", ws, timeout=300)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "ℹ calibrated on" in plan.stdout, plan.stdout
    assert "shortest run of the planned 8 steps first" in plan.stdout, plan.stdout
    own = [line for line in plan.stdout.splitlines() if "planned run ~" in line]
    assert own and all("start-up and checkpoints measured here" in line for line in own), own
    assert sum("measured here (8 steps x" in line for line in own) == 2, own  # your config's and the first's
    starts = [float(x) for line in own for x in re.findall(r"start-up (\d+\.\d+) s measured here", line)]
    measured = [m.startup_s for m in cal.good if m.startup_s is not None]
    assert starts and measured and all(min(measured) - 0.01 <= x <= max(measured) + 0.01 for x in starts), own
    table = render_calibration(cal)
    assert "start s" in table and "ckpt s" in table and f"{cal.good[0].checkpoint_s:.2f}" in table
    # a CPU has no device memory to read: the time is measured, the peak stays the prediction and says so
    assert cal.good and all(m.peak_gib is None for m in cal.good)
    assert "(measured here; memory predicted)" in plan.stdout, plan.stdout
    # the others are calibrated (from their family, or from other settings when none of theirs was measured)
    assert re.search(r"\(calibrated here( \(from other settings\))?; memory predicted\)", plan.stdout), plan.stdout
    assert "(measured here)" not in plan.stdout, plan.stdout
    # the first ranked entry is explained; when it is a measured one, its reasons say the peak was not measured. (Which
    # entry ranks first varies: for an 8-step plan the measured start-ups, seconds apart on a busy CPU, decide it.)
    first = next(line for line in plan.stdout.splitlines() if re.match(r"\s+1\. ", line))
    if "(measured here; memory predicted)" in first:
        assert "peak not measured (predicted" in plan.stdout, plan.stdout
    labels = {m.label for m in cal.good}
    measured_lines = [line for line in plan.stdout.splitlines() if "(measured here" in line]
    assert any(label in line for line in measured_lines for label in labels)

    fresh = tmp_path / "ws-none"
    fresh.mkdir()
    before = hipwizard("train", "plan", demo_config, "--workspace", fresh, timeout=300)
    assert "(measured here)" not in before.stdout and "predicted, H200-fitted model" in before.stdout
    assert "start-up and checkpoints prior" in before.stdout and "measured here (8 steps" not in before.stdout


@pytest.mark.parametrize("args, says", [
    (("--candidates", 0), "candidates must be between 1 and 16, not 0 (--candidates)"),
    (("--steps", 0), "steps must be between 4 and 1000 (the first 2 are warm-up), not 0 (--steps)"),
    (("--steps", 3), "steps must be between 4 and 1000"),  # the default 2 warm-up steps leave 1 timed
], ids=["K=0", "steps=0", "steps-not-past-warmup"])
def test_bad_numbers_are_one_line_and_exit_2(tmp_path, demo_config, args, says):
    done = hipwizard("train", "calibrate", demo_config, *args, "--platform", "cpu", "--workspace", tmp_path,
                     timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert not (tmp_path / ".hipwizard" / "runs").exists()  # nothing was launched


def test_missing_config_is_one_line_and_exit_2(tmp_path):
    done = hipwizard("train", "calibrate", tmp_path / "nope.yaml", "--workspace", tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope.yaml does not exist" in lines[0], done.stderr


def test_calibration_runs_on_one_gpu_unless_told_otherwise(tmp_path, demo_config, monkeypatch):
    """The key says world size 1, so a many-GPU box must not train a candidate on all its GPUs."""
    import hipwizard.train.calibration.services as calibrate_module
    from hipwizard.train.calibration.services import calibrate
    from hipwizard.train.run.launcher import LaunchOptions

    seen = []

    def fake_run(advice, **kw):
        seen.append(kw["options"])
        raise KeyboardInterrupt  # stop before anything is launched

    monkeypatch.setattr(calibrate_module, "run_calibration", fake_run)
    ws = Workspace.open(tmp_path / "ws")
    for options in (None, LaunchOptions(platform="cuda"), LaunchOptions(gpus=[3]), LaunchOptions(platform="cpu")):
        with pytest.raises(KeyboardInterrupt):
            calibrate(ws, demo_config, candidates=1, steps=4, options=options)
    assert [o.gpus for o in seen] == [[0], [0], [3], None]
