"""Run listing and stopping with real process trees (shell scripts that spawn children and grandchildren)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from hipwizard.train.run.launcher import LaunchOptions, launch
from hipwizard.train.run.manifest import RunEnd, load_manifest, read_exit
from hipwizard.train.run.runs import list_runs, run_info
from hipwizard.train.run.stop import group_members, run_processes, stop_run

from .helpers import pids_alive, run_dir_with, script, wait_for

# A trainer that ignores the graceful signal and leaves grandchildren behind, one in its own session
# (as some launchers do): the stop must still leave nothing alive.
STUBBORN = """trap '' ABRT TERM INT
sleep 300 &
(sleep 301 & wait) &
setsid sleep 302 &
echo started
wait
"""


def test_stop_kills_the_whole_tree_even_when_signals_are_ignored(tmp_path):
    d = run_dir_with(tmp_path)
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, STUBBORN)))
    wait_for(lambda: len(run_processes(m)) >= 6, timeout=20)
    tree = set(run_processes(m))
    result = stop_run(m, grace_s=0.5, term_s=0.5)
    assert result.clean, result
    assert [s.split()[0] for s in result.steps] == ["SIGABRT", "SIGTERM", "SIGKILL"]
    assert pids_alive(tree) == []
    info = run_info(d)
    assert info.state == "stopped" and info.returncode is None


def test_states_finished_failed_lost_and_not_launched(tmp_path):
    ok = run_dir_with(tmp_path, name="ok")
    output = ok / "output"
    output.mkdir()
    (output / "trainer_log.jsonl").write_text(
        '{"current_steps": 3, "total_steps": 3, "loss": 1.5}\n{"current_steps": 3, "total_steps": 3}\n')
    launch(ok, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "exit 0\n", "ok.sh")))
    bad = run_dir_with(tmp_path, name="bad")
    launch(bad, LaunchOptions(platform="cpu", llamafactory_cli=script(
        tmp_path, "echo 'ValueError: Please specify `lora_target` in LoRA training.'\nexit 1\n", "bad.sh")))
    wait_for(lambda: run_info(ok).state == "finished" and run_info(bad).state == "failed", timeout=30)
    assert (run_info(ok).step, run_info(ok).loss) == (3, 1.5)
    failed = run_info(bad)
    assert failed.cause == "ValueError: Please specify `lora_target` in LoRA training."

    lost = run_dir_with(tmp_path, name="lost")
    launch(lost, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 60\n", "lost.sh")))
    m = load_manifest(lost)
    for p in run_processes(m).values():
        p.kill()  # as if the machine went down: no exit.json
    try:  # a child forked between the listing and the kill is still in the group
        os.killpg(m.pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    wait_for(lambda: not run_processes(m) and not group_members(m), timeout=10)
    (lost / "exit.json").unlink(missing_ok=True)
    assert run_info(lost).state == "lost"

    never = run_dir_with(tmp_path, name="never")
    assert run_info(never).state == "not launched"
    states = {i.name: i.state for i in list_runs([tmp_path])}
    assert states == {"ok": "finished", "bad": "failed", "lost": "lost"}


def test_pid_reuse_is_not_mistaken_for_our_run(tmp_path):
    d = run_dir_with(tmp_path)
    launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "exit 0\n")))
    wait_for(lambda: run_info(d).state == "finished", timeout=20)
    m = load_manifest(d)
    data = json.loads((d / "run.json").read_text())
    data["pid"] = data["pgid"] = 1  # a live process that is not ours
    (d / "run.json").write_text(json.dumps(data))
    assert run_info(d).state == "finished"
    assert m is not None


@pytest.mark.slow
def test_cli_runs_json_and_stop(tmp_path):
    d = run_dir_with(tmp_path, name="cli")
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 120\n")))
    out = subprocess.run([sys.executable, "-m", "hipwizard", "runs", "--json", str(tmp_path), "--workspace",
                          str(tmp_path)], capture_output=True, text=True, check=True).stdout
    [row] = json.loads(out)
    assert row["state"] == "running" and row["pid"] == m.pid
    stop = subprocess.run([sys.executable, "-m", "hipwizard", "stop", str(d), "--grace", "1"], capture_output=True,
                          text=True)
    assert stop.returncode == 0 and "no process of the run is left" in stop.stdout
    assert run_info(d).state == "stopped"
    again = subprocess.run([sys.executable, "-m", "hipwizard", "stop", str(tmp_path / "nothing")], capture_output=True,
                           text=True)
    assert again.returncode == 2 and "nothing does not exist" in again.stderr and "Traceback" not in again.stderr


def test_step_status_line(tmp_path):
    from hipwizard.train.state import remember_run, summarize
    from hipwizard.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    assert summarize(ws).state == "not started"
    d = run_dir_with(ws.runs_dir, name="lora-8b")
    assert "planned, not launched" in summarize(ws).summary
    (d / "output").mkdir()
    (d / "output" / "trainer_log.jsonl").write_text('{"current_steps": 120, "total_steps": 500, "loss": 1.234}\n')
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 30\n")))
    remember_run(ws, m.run_dir)
    st = summarize(ws)
    assert (st.state, st.summary) == ("in progress", "run 'lora-8b' running, step 120/500, loss 1.23")
    stop_run(m, grace_s=0, term_s=2)


def test_exit_json_is_a_record_and_wrong_types_read_as_unknown(tmp_path):
    (tmp_path / "exit.json").write_text('{"returncode": "0", "stopped": "yes", "ended": 5, "duration_s": 1.5}')
    assert read_exit(tmp_path) == RunEnd(returncode=None, ended=None, stopped=False, duration_s=1.5)
    (tmp_path / "exit.json").write_text('{"returncode": 0, "stopped": false, "ended": "2026-12-05T03:00:00"}')
    assert read_exit(tmp_path) == RunEnd(returncode=0, ended="2026-12-05T03:00:00")
