"""Adversarial cases that need a real process: a reader that goes away, a closed or full stdout,
``kill -9`` in the middle of a write, two instances at once, and a launch that must write only into its
run directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from hipwizard.cli import main
from hipwizard.workspace import Workspace

from .rows_train import recipe
from .rows_workspace import H200
from .table import fingerprint

HIPWIZARD = [sys.executable, "-m", "hipwizard"]


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "HIPWIZARD_CACHE": str(tmp / "cache")}


def _reader_gone(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """Run with stdout a pipe whose reading end is already closed (`| head -0`, deterministic)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*HIPWIZARD, *argv], stdout=w, stderr=subprocess.PIPE, text=True, cwd=tmp,
                              env=_env(tmp), timeout=120)
    finally:
        os.close(w)
    return proc


def test_a_reader_that_goes_away_ends_quietly(tmp_path):
    for argv in (["doctor", "--replay", H200, "--no-save"], ["status", str(tmp_path), "--json"], ["--help"]):
        proc = _reader_gone(argv, tmp_path)
        # --help is argparse's own exit (0); what matters there is the silence
        assert proc.returncode == (0 if argv == ["--help"] else 141), (argv, proc.returncode, proc.stderr)
        assert proc.stderr == "", (argv, proc.stderr)  # no BrokenPipeError, no "Exception ignored"


def test_head_1_of_a_long_output(tmp_path):
    out = subprocess.run(" ".join([*HIPWIZARD, "doctor", "--replay", H200, "--no-save", "--json"]) + " | head -1",
                         shell=True, capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=120)
    assert out.stdout == "{\n" and "Traceback" not in out.stderr and "Error" not in out.stderr


def test_closed_stdout_still_does_the_work(tmp_path):
    """`hipwizard doctor ... >&-`: nothing to print to, but the report is saved and the exit code is right."""
    proc = subprocess.run(["bash", "-c", 'exec "$@" >&-', "sh", *HIPWIZARD, "doctor", "--replay", H200, "--workspace",
                           "ws"], capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads((tmp_path / "ws/.hipwizard/doctor.json").read_text())["report"]


def test_full_stdout_is_one_line_exit_2(tmp_path):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*HIPWIZARD, "doctor", "--replay", H200, "--no-save", "--json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("hipwizard: error: ") and "No space left" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


WRITER = """
import sys
from hipwizard.workspace import Workspace
ws = Workspace(sys.argv[1])
n = 0
print("ready", flush=True)
while True:
    n += 1
    ws.update_state("train", launched_runs=[f"/runs/{n}-{i}" for i in range(2000)], last_run=f"/runs/{n}")
"""


def test_kill_9_mid_write_leaves_a_whole_state_file(tmp_path):
    ws = Workspace(tmp_path / "ws")
    for attempt in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(ws.root)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.2 + 0.07 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        saved = ws.state_file("train")
        state = saved.data
        assert saved.error == "" and len(state["launched_runs"]) == 2000
        assert state["last_run"] == state["launched_runs"][0].rsplit("-", 1)[0]
    assert ws.step_status("train").state != "attention"


HOLDER = """
import sys
from hipwizard.demo_workspace import open_demo_workspace
demo = open_demo_workspace(sys.argv[1] if len(sys.argv) > 1 else None)
print(demo.workspace.root, flush=True)
print(demo.notice, flush=True)
sys.stdin.read()
"""


def _holder(tmp: Path, *args: str) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(tmp))
    root, notice = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    assert root, proc.stderr.read()
    return proc, root, notice


def test_two_demo_instances_get_two_workspaces_and_say_so(tmp_path):
    first, root1, notice1 = _holder(tmp_path)
    second, root2, notice2 = _holder(tmp_path)
    try:
        assert root1 == str(tmp_path / "cache" / "demo-workspace") and notice1 == ""
        assert root2 == str(tmp_path / "cache" / "demo-workspace-2")
        assert "in use by another hipwizard" in notice2 and f"pid {first.pid}" in notice2 and root2 in notice2
        assert (Path(root2) / "cuda_project").is_dir()  # a whole demo of its own, not a half-shared one
    finally:
        for p in (first, second):
            p.stdin.close()
            p.wait(30)
    # both gone: the next instance gets the shared one back (kept from the earlier session)
    third, root3, notice3 = _holder(tmp_path)
    third.stdin.close()
    third.wait(30)
    assert root3 == root1 and notice3 == ""


def test_a_killed_demo_instance_frees_its_workspace(tmp_path):
    first, root1, _ = _holder(tmp_path)
    first.kill()
    first.wait(30)
    second, root2, notice2 = _holder(tmp_path)
    second.stdin.close()
    second.wait(30)
    assert root2 == root1 and notice2 == ""


def test_a_named_demo_folder_in_use_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIPWIZARD_CACHE", str(tmp_path / "cache"))
    holder, root, _ = _holder(tmp_path, str(tmp_path / "mine"))
    try:
        assert main(["--demo", str(tmp_path / "mine")]) == 2
        err = capsys.readouterr().err
        assert "is open in another hipwizard --demo" in err and f"pid {holder.pid}" in err
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_train_run_writes_only_into_its_run_directory(tmp_path, capsys, monkeypatch):
    """A config next to the user's files: the run gets a new folder under the workspace, relative paths
    still reach the user's model and data, and nothing appears beside the config."""
    from hipwizard.train.run import launcher
    recipe("config.yaml")(tmp_path)
    user = tmp_path / "r"
    before = fingerprint(user)
    fake = tmp_path / "fake-llamafactory-cli"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setattr(launcher, "find_llamafactory_cli", lambda explicit=None: str(fake))
    monkeypatch.chdir(tmp_path)
    run_dirs = []
    for _ in range(2):  # twice in the same second: two run directories
        assert main(["train", "run", "r/config.yaml", "--detach", "--platform", "cpu", "--workspace", "ws"]) == 0
        out = capsys.readouterr().out
        run_dirs.append(Path(out.split("log ")[1].split()[0]).parent)
    assert fingerprint(user) == before
    assert run_dirs[0] != run_dirs[1] and all(d.parent == tmp_path / "ws/.hipwizard/runs" for d in run_dirs)
    cfg = yaml.safe_load((run_dirs[0] / "config.yaml").read_text())
    assert cfg["model_name_or_path"] == str(user / "m8b") and cfg["dataset_dir"] == str(user / "data")
    assert cfg["deepspeed"] == "ds_config.json"
    assert json.loads((run_dirs[0] / "ds_config.json").read_text()) == json.loads((user / "ds_z3_config.json").read_text())


def test_help_documents_the_exit_codes(capsys):
    try:
        main(["--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    for line in ("0    success", "1    a check failed", "2    bad input", "141"):
        assert line in out


def test_hipify_json_head_1(tmp_path):
    """`hipwizard hipify SRC --out DIR --json | head -1`: the first line, then quiet; the review is still saved."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1; }\n" * 400)
    out = subprocess.run(" ".join([*HIPWIZARD, "hipify", "src", "--out", "o", "--backend", "builtin", "--json"])
                         + " | head -1", shell=True, capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path),
                         timeout=120)
    assert out.stdout == "{\n", out.stdout
    assert out.stderr == "", out.stderr
    assert (tmp_path / "o.review.json").is_file()
    proc = _reader_gone(["hipify", "src", "--out", "o2", "--backend", "builtin", "--json"], tmp_path)
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr)


def _stale_copy(real: Path, dest: Path, **fields) -> Path:
    """A run directory whose run.json is ``real``'s with ``fields`` replaced (a run whose supervisor is
    gone and whose pid / group number now belong to someone else)."""
    dest.mkdir()
    data = json.loads((real / "run.json").read_text())
    data.update(run_dir=str(dest), **fields)
    (dest / "run.json").write_text(json.dumps(data))
    return dest


def test_stop_signals_no_group_that_is_not_the_runs(tmp_path, capsys):
    """`hipwizard stop` on a run whose group number now belongs to an unrelated process group: nothing is
    signalled and the stranger lives; the real run is still stopped."""
    import psutil

    from hipwizard.train.run.launcher import LaunchOptions, launch

    from ..train.helpers import pids_alive, run_dir_with, script, wait_for

    real = run_dir_with(tmp_path, name="real")
    m = launch(real, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 120\n")))
    stranger = subprocess.Popen(["setsid", "sleep", "60"])  # not a group leader: setsid execs in place
    try:
        wait_for(lambda: os.getpgid(stranger.pid) == stranger.pid, timeout=10)
        born = psutil.Process(stranger.pid).create_time()
        cases = {
            # the worst case: the record's pid, group and even its create time are the stranger's
            "same-token": {"pid": stranger.pid, "pgid": stranger.pid, "pid_create_time": born},
            "dead-leader": {"pgid": stranger.pid, "pid": 999_999_999},
            "no-token": {"pid": stranger.pid, "pgid": stranger.pid, "pid_create_time": 0.0, "run_token": ""},
        }
        for name, fields in cases.items():
            stale = _stale_copy(real, tmp_path / name, **fields)
            assert main(["stop", str(stale), "--grace", "0"]) == 0, name
            out = capsys.readouterr().out
            assert "the run's processes are gone" in out and "SIG" not in out, (name, out)
            assert stranger.poll() is None, f"{name}: the unrelated process group was signalled"
            assert not (stale / "stop_requested").exists() and not (stale / "exit.json").exists()
        tree = [m.pid, *(c.pid for c in psutil.Process(m.pid).children(recursive=True))]
        assert main(["stop", str(real), "--grace", "1"]) == 0
        assert "no process of the run is left" in capsys.readouterr().out
        wait_for(lambda: pids_alive(tree) == [], timeout=10)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait(10)
