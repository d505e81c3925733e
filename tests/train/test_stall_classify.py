"""Stall verdicts, incident classification and checkpoint completeness, on recorded texts and real folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hipwizard.train.run.classify import classify
from hipwizard.train.run.resume import newest_checkpoint
from hipwizard.train.run.stall import StallClock, StallPolicy, read_stall, write_stall

POLICY = StallPolicy(k=3.0, floor_s=10.0, startup_s=100.0)


def test_stall_threshold_is_k_times_the_median_gap_or_the_floor():
    clock = StallClock(0.0, POLICY)
    assert not clock.verdict(99.0).stalled and clock.verdict(100.0).stalled  # start-up floor, no step yet
    for t in (120.0, 125.0, 130.0, 135.0):  # 5 s per logged step: 3 x 5 = 15 s > the 10 s floor
        clock.record(t, int(t))
    assert clock.median_step_s == 5.0 and clock.threshold_s() == 15.0
    assert not clock.verdict(149.0).stalled
    v = clock.verdict(150.0)
    assert v.stalled and v.step == 135 and "after step 135" in v.line()
    fast = StallClock(0.0, POLICY)
    for t in (1.0, 1.5, 2.0, 2.5):
        fast.record(t, None)
    assert fast.threshold_s() == 10.0  # the floor wins over 3 x 0.5 s
    fast.record(2.5, 9)  # a burst read at once is one arrival, not a zero gap
    assert fast.median_step_s == 0.5 and fast.step == 9


def test_a_burst_read_at_once_gives_the_pace_not_the_start_up_floor():
    """Fifteen steps faster than the watchdog's 0.6 s poll, all read in one poll: without spreading them the
    clock had one arrival, no median, and a stall right after waited for the start-up floor (450 s here,
    never the 10 s floor); the real-run test of auto-resume hung on it when steps ran at 60/s."""
    clock = StallClock(0.0, StallPolicy(k=3.0, floor_s=10.0, startup_s=1800.0))
    clock.record(5.0, 15, count=15, within_s=0.6)
    assert clock.median_step_s is not None and clock.median_step_s == pytest.approx(0.04)
    assert clock.threshold_s() == 10.0 and clock.step == 15
    assert not clock.verdict(14.9).stalled and clock.verdict(15.0).stalled
    one = StallClock(0.0, StallPolicy(k=3.0, floor_s=10.0, startup_s=1800.0))
    one.record(5.0, 1, count=1, within_s=0.6)  # a single record is one arrival: no pace yet
    assert one.median_step_s is None and one.threshold_s() == 450.0


def test_a_stall_verdict_holds_only_until_the_trainer_log_grows(tmp_path):
    log = tmp_path / "trainer_log.jsonl"
    log.write_text('{"current_steps": 1}\n')
    clock = StallClock(0.0, POLICY)
    clock.record(1.0, 1)
    write_stall(tmp_path, clock.verdict(200.0, log.stat().st_size))
    assert read_stall(tmp_path, log) is not None
    log.write_text('{"current_steps": 1}\n{"current_steps": 2}\n')
    assert read_stall(tmp_path, log) is None


HW_EXCEPTION = """[rank3]: {'loss': 1.2, 'grad_norm': 0.4}
HW Exception by GPU node-5 (Agent handle: 0x55d0) reason :GPU Hang
"""
KERNEL = ["[Tue Mar  4 10:01:02 2025] amdgpu 0000:05:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3)",
          "[Tue Mar  4 10:01:02 2025] amdgpu 0000:05:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
          "[Tue Mar  4 10:01:09 2025] amdgpu 0000:05:00.0: amdgpu: GPU reset begin!"]


def test_gpu_hang_wins_with_log_and_kernel_evidence():
    d = classify(HW_EXCEPTION, kernel=KERNEL, returncode=-6)
    assert d.kind == "gpu-hang"
    assert any(e.startswith("log: HW Exception") for e in d.evidence)
    assert any(e.startswith("kernel:") and "GPU reset" in e for e in d.evidence)


def test_memory_access_fault():
    text = "Memory access fault by GPU node-2 (Agent handle: 0x5634) on address 0x7f2. Reason: Page not present or supervisor privilege.\n"
    d = classify(text, kernel=KERNEL[:2], returncode=-6)
    assert d.kind == "memory-fault" and "AMD_SERIALIZE_KERNEL" in d.fix
    assert d.evidence[0].startswith("log: Memory access fault")


def test_collective_timeout_names_the_timeout_line_and_the_stacks():
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=3, OpType=ALLGATHER, NumelIn=1, NumelOut=8, Timeout(ms)=600000) ran for 600004 "
            "milliseconds before timing out.\n")
    stack = 'Thread 7 (idle): "MainThread"\n    all_gather (torch/distributed/distributed_c10d.py:3160)\n'
    d = classify(text, stacks=[(7, "sleeping", stack)], returncode=1)
    assert d.kind == "collective-timeout" and d.field == "ddp_timeout"
    assert "OpType=ALLGATHER" in d.evidence[0] and d.evidence[-1].startswith("stack 7 (sleeping): all_gather")


def test_stalled_stacks_in_the_input_pipeline_or_a_collective():
    data = 'Thread 9 (idle): "MainThread"\n    _recv_bytes (multiprocessing/connection.py:430)\n' \
           '    _next_data (torch/utils/data/dataloader.py:1329)\n'
    assert classify("", stacks=[(9, "sleeping", data)], stalled=True).kind == "input-stall"
    coll = 'Thread 9 (idle): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2501)\n'
    d = classify("", stacks=[(9, "sleeping", coll), (10, "running", data)], stalled=True)
    assert d.kind == "collective-hang" and d.line.startswith("1 of 2")
    assert classify("", stacks=[(9, "stopped", coll)], stalled=True).kind == "process-stopped"
    assert classify("", stalled=True).kind == "stalled"


def test_known_failures_still_come_from_the_run_watcher():
    text = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n"
    d = classify(text, returncode=1)
    assert d.kind == "oom" and d.field == "per_device_train_batch_size"
    assert classify("all good\n", returncode=0) is None


def _checkpoint(out: Path, step: int, *, state: bool = True, weights: bool = True) -> None:
    d = out / f"checkpoint-{step}"
    d.mkdir(parents=True)
    if weights:
        (d / "adapter_model.safetensors").write_bytes(b"x")
        (d / "rng_state.pth").write_bytes(b"x")
    if state:
        (d / "trainer_state.json").write_text(json.dumps({"global_step": step}))


def test_newest_complete_checkpoint_skips_one_cut_short(tmp_path):
    assert newest_checkpoint(tmp_path / "missing") is None
    _checkpoint(tmp_path, 4)
    _checkpoint(tmp_path, 8)
    _checkpoint(tmp_path, 12, state=False)  # killed while saving: no trainer_state.json yet
    _checkpoint(tmp_path, 16, weights=False)
    (tmp_path / "checkpoint-x").mkdir()
    assert newest_checkpoint(tmp_path).step == 8


def test_a_killed_trainer_is_named_and_an_oom_kill_in_the_kernel_log_wins():
    d = classify("{'loss': 1.2}\n", returncode=-9)
    assert d.kind == "killed" and "SIGKILL" in d.line and "--resume" in d.fix
    oom = ["[Fri Dec  4 18:47:06 2026] Out of memory: Killed process 19363 (python) total-vm:24983680kB"]
    d = classify("{'loss': 1.2}\n", kernel=oom, returncode=-9)
    assert d.kind == "host-oom" and d.evidence[0].startswith("kernel: [Fri Dec  4 18:47:06 2026] Out of memory")


def test_kernel_lines_are_dated_so_old_ones_can_be_left_out():
    from hipwizard.train.run.incident import line_time

    old = line_time("[Fri Dec  4 18:47:06 2026] Out of memory: Killed process 19363 (python)")
    new = line_time("[Sat Dec  5 08:05:53 2026] amdgpu 0000:05:00.0: amdgpu: GPU reset begin!")
    assert old is not None and new is not None and new - old == 13 * 3600 + 18 * 60 + 47
    assert line_time("amdgpu: no time here") is None


HANGS = """mkdir -p output
for i in 1 2 3 4; do
  echo "{\\"current_steps\\": $i, \\"total_steps\\": 10, \\"loss\\": 1.$i}" >> output/trainer_log.jsonl
  sleep 0.2
done
sleep 120
"""


@pytest.mark.slow
def test_runs_and_attach_say_stalled_with_the_alarm_and_the_incident(tmp_path, capsys):
    """A real process tree that logs four steps, then hangs alive: the supervisor's watchdog marks it stalled."""
    from hipwizard.cli import main as cli_main
    from hipwizard.train.run.launcher import LaunchOptions, launch
    from hipwizard.train.run.runs import run_info
    from hipwizard.train.run.stop import stop_run

    from .helpers import run_dir_with, script, wait_for

    d = run_dir_with(tmp_path)
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, HANGS),
                                stall=StallPolicy(k=3.0, floor_s=1.0, startup_s=30.0)))
    try:
        wait_for(lambda: run_info(d).state == "stalled", timeout=30, poll=0.1)
        wait_for(lambda: (d / "incident.json").is_file(), timeout=60, poll=0.1)
        assert cli_main(["attach", str(d), "--no-follow"]) == 1
        out = capsys.readouterr().out
        assert "ALARM ⏸ stalled: no new step for" in out and "after step 4" in out
        assert "incident.txt" in out and "fix:" in out
        assert cli_main(["runs", str(tmp_path), "--workspace", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "⏸ stalled" in out and "ALARM stalled" in out and "incident: stalled" in out
    finally:
        stop_run(m, grace_s=0.5, term_s=3)
