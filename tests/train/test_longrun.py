"""Long runs: stalls caught and captured, kill -9 then resume, a stopped rank's collective timeout named.

The slow tests run the real ``llamafactory-cli train`` (LoRA on the tiny demo model, fp32 on CPU) through
hipwizard's launcher and supervisor; the signals go only to processes of the run's own process group that carry
its marker (``stop.run_processes``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from hipwizard.train.demo import demo_values
from hipwizard.train.run.incident import read_incident
from hipwizard.train.run.launcher import LaunchOptions, launch
from hipwizard.train.run.resume import read_attempts
from hipwizard.train.run.runs import run_info
from hipwizard.train.run.stall import StallPolicy, read_stall
from hipwizard.train.run.stop import run_processes, stop_run, trainer_processes
from hipwizard.train.run.watch import RunWatch

from .helpers import LF_ENV, wait_for

FLOOR_S = 6.0


def _config(d: Path, assets, **overrides) -> None:
    cfg = demo_values(assets.root, max_steps=60)
    cfg.update(save_steps=4, overwrite_output_dir=True, seed=7, data_seed=7, **overrides)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))


def _losses(d: Path) -> dict[int, float]:
    out = {}
    for line in (d / "output" / "trainer_log.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "loss" in rec:
            out[rec["current_steps"]] = rec["loss"]
    return out


def _steps(d: Path) -> int:
    w = RunWatch(d)
    w.attach()
    return len(w.history.points)


@pytest.mark.slow
def test_sigstopped_trainer_is_stalled_with_its_stacks_captured(tmp_path, demo_assets):
    d = tmp_path / "stall"
    _config(d, demo_assets, max_steps=400)
    m = launch(d, LaunchOptions(platform="cpu", extra_env=LF_ENV, stall=StallPolicy(k=3.0, floor_s=FLOOR_S)))
    try:
        wait_for(lambda: _steps(d) >= 6, timeout=240, poll=0.3)
        trainers = trainer_processes(run_processes(m))  # carries the run's marker, in the run's group
        assert len(trainers) == 1
        n = _steps(d)
        wait_for(lambda: _steps(d) >= n + 3, timeout=120, poll=0.05)
        os.kill(trainers[0].pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        info = wait_for(lambda: (i := run_info(d)).state == "stalled" and i, timeout=180, poll=0.2)
        incident = wait_for(lambda: read_incident(d), timeout=60, poll=0.2)
        took = time.monotonic() - stopped_at
        verdict = read_stall(d, m.trainer_log_path)
        assert verdict is not None and verdict.median_step_s is not None
        assert took <= 3 * verdict.median_step_s + FLOOR_S + 5.0, (took, verdict)  # +5 s: the capture itself
        assert info.stall and "no new step" in info.stall
        assert incident.trigger == "stall"
        [stack] = incident.stacks
        assert stack.pid == trainers[0].pid and stack.status == "stopped"
        assert "Thread" in stack.text and "(" in stack.text  # py-spy's frames
        assert incident.diagnosis.kind == "process-stopped"
        assert str(trainers[0].pid) in incident.diagnosis.line
        assert (d / "incident.txt").read_text().count("== Python stacks") == 1
        assert incident.gpu and incident.gpu[0].startswith("source:")
        assert incident.kernel or incident.kernel_note
    finally:
        for p in trainer_processes(run_processes(m)):
            p.send_signal(signal.SIGCONT)
        stop_run(m, grace_s=0.5, term_s=5)


@pytest.mark.slow
def test_kill_9_then_resume_continues_with_the_uninterrupted_losses(tmp_path, demo_assets, monkeypatch, capsys):
    from hipwizard.cli import main as cli_main

    for k, v in LF_ENV.items():
        monkeypatch.setenv(k, v)
    steps = 40  # killed from step 5 on: the tiny model runs ~60 steps/s on an idle machine, and a kill near the
    # end of a short run raced its finish
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    for d in (whole, cut):
        _config(d, demo_assets, max_steps=steps)
    launch(whole, LaunchOptions(platform="cpu", extra_env=LF_ENV))
    m = launch(cut, LaunchOptions(platform="cpu", extra_env=LF_ENV))
    wait_for(lambda: _steps(cut) >= 5, timeout=300, poll=0.05)
    [trainer] = trainer_processes(run_processes(m))
    os.kill(trainer.pid, signal.SIGKILL)
    wait_for(lambda: run_info(cut).state == "failed", timeout=60, poll=0.2)
    assert read_incident(cut).trigger == "exit code -9"
    wait_for(lambda: run_info(whole).state == "finished", timeout=300, poll=0.5)
    assert len(_losses(cut)) < steps

    rc = cli_main(["train", "run", str(cut), "--resume", "--detach", "--platform", "cpu",
                   "--workspace", str(tmp_path / "ws")])
    out = capsys.readouterr().out
    assert rc == 0 and "attempt 2: resuming from" in out, out
    wait_for(lambda: run_info(cut).state != "running", timeout=300, poll=0.5)
    assert run_info(cut).state == "finished", run_info(cut).cause
    attempts = read_attempts(cut)
    assert [(a.attempt, a.reason, a.outcome) for a in attempts] == [(1, "launch", "failed"), (2, "resume", "finished")]
    ckpt = attempts[1].step
    assert ckpt is not None and 4 <= ckpt < steps
    assert f"Resuming training from checkpoint with epoch 0 and global step {ckpt}" in (cut / "train.log").read_text()
    assert (cut / "incident.attempt-1.json").is_file() and not (cut / "incident.json").exists()
    expected, got = _losses(whole), _losses(cut)
    after = [s for s in range(ckpt + 1, steps + 1)]
    assert after and all(abs(got[s] - expected[s]) <= 1e-6 for s in after), \
        [(s, got.get(s), expected[s]) for s in after]
    w = RunWatch(cut)
    w.attach()  # one loss curve: the steps before the checkpoint, then the resumed ones, none twice
    assert [p.step for p in w.history.points] == list(range(1, steps + 1))


def _rank(p) -> int | None:
    try:
        return int(p.environ().get("RANK", ""))
    except (ValueError, Exception):
        return None


@pytest.mark.slow
def test_two_rank_gloo_run_with_one_rank_stopped_is_a_collective_timeout(tmp_path, demo_assets):
    d = tmp_path / "gloo"
    _config(d, demo_assets, max_steps=400, ddp_timeout=20)
    m = launch(d, LaunchOptions(platform="cpu", nproc_per_node=2, extra_env=LF_ENV,
                                stall=StallPolicy(k=3.0, floor_s=FLOOR_S)))
    try:
        wait_for(lambda: _steps(d) >= 4, timeout=300, poll=0.3)
        ranks = {_rank(p): p for p in trainer_processes(run_processes(m))}
        assert sorted(ranks) == [0, 1]
        os.kill(ranks[1].pid, signal.SIGSTOP)
        wait_for(lambda: run_info(d).state == "stalled", timeout=120, poll=0.3)
        wait_for(lambda: run_info(d).state == "failed", timeout=240, poll=0.5)
        incident = read_incident(d)
        assert incident.trigger.startswith("stall, then exit code")
        diag = incident.diagnosis
        assert diag.kind == "collective-timeout", incident.text()
        assert any(e.startswith("log:") and "Timed out" in e for e in diag.evidence), diag.evidence
        # the stall's stacks say which rank was held and where the other waited
        assert any(e.startswith(f"stack {ranks[1].pid} (stopped)") for e in diag.evidence), diag.evidence
        assert incident.comm and "NCCL_DEBUG=INFO" in incident.comm_note
        info = run_info(d)
        assert info.incident.startswith("collective-timeout")
    finally:
        for p in trainer_processes(run_processes(m)):
            p.send_signal(signal.SIGCONT)
        stop_run(m, grace_s=0.5, term_s=5)


@pytest.mark.slow
def test_auto_resume_after_a_stall_restarts_from_the_checkpoint_once(tmp_path, demo_assets):
    d = tmp_path / "auto"
    # 60 steps, stopped from step 5 on (checkpoint-4 is complete by then): on an idle machine the tiny model
    # runs ~60 steps/s, and stopping near the end of a 16-step run raced its finish.
    _config(d, demo_assets, max_steps=60)
    m = launch(d, LaunchOptions(platform="cpu", extra_env=LF_ENV, auto_resume=1,
                                stall=StallPolicy(k=3.0, floor_s=FLOOR_S)))
    try:
        wait_for(lambda: _steps(d) >= 5, timeout=300, poll=0.05)
        [trainer] = trainer_processes(run_processes(m))
        os.kill(trainer.pid, signal.SIGSTOP)
        wait_for(lambda: len(read_attempts(d)) == 2, timeout=180, poll=0.3)  # the supervisor resumed by itself
        wait_for(lambda: run_info(d).state not in ("running", "stalled"), timeout=300, poll=0.5)
    finally:
        for p in trainer_processes(run_processes(m)):
            p.send_signal(signal.SIGCONT)
        stop_run(m, grace_s=0.5, term_s=5)
    assert run_info(d).state == "finished", run_info(d).cause
    first, second = read_attempts(d)
    assert (first.outcome, second.reason, second.outcome) == ("stalled", "auto-resume after stalled", "finished")
    assert second.step is not None and second.step >= 4 and not trainer.is_running()
    assert (d / "incident.attempt-1.json").is_file()  # the stall's incident, kept under its attempt
    log = (d / "train.log").read_text()
    assert "hipwizard: attempt 2: resuming from checkpoint-" in log
    assert f"Resuming training from checkpoint with epoch 0 and global step {second.step}" in log
    assert len(_losses(d)) == 60
