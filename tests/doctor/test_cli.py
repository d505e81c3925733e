"""``hipwizard doctor``: exit codes, --json, --record, --replay, bad input, missing and hanging tools."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from hipwizard.cli import main
from hipwizard.doctor.pipeline import diagnose
from hipwizard.doctor.probe.tools import Probe, run_probes
from hipwizard.runner import SubprocessRunner
from hipwizard.workspace import Workspace
from tests.doctor.conftest import ENVS


def test_replay_json_exit_code_and_saved_report(tmp_path, capsys):
    rc = main(["doctor", "--replay", str(ENVS / "nogpu-debian"), "--json", "--workspace", str(tmp_path)])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["counts"]["fail"] >= 1
    assert data["origin"] == "replay of nogpu-debian"
    saved = Workspace(tmp_path).read_state("doctor")["report"]
    assert saved["summary"] == data["summary"]
    st = Workspace(tmp_path).step_status("doctor")
    assert st.state == "attention" and "GPU" in st.summary


def test_exit_0_when_nothing_fails(tmp_path, capsys):
    d = tmp_path / "nofail"
    import shutil

    shutil.copytree(ENVS / "mi300x-8x-rocm62", d)
    rc = main(["doctor", "--replay", str(d), "--no-save"])
    out = capsys.readouterr().out
    assert rc == 0 and "✔ ok   GPU" in out and "✖" not in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "junk.bin").write_bytes(b"\x00" * 10)
    assert main(["doctor", "--replay", str(tmp_path)]) == 2
    assert main(["doctor", "--replay", str(tmp_path / "nope")]) == 2
    assert main(["doctor", "--timeout", "-1", "--replay", str(ENVS / "nogpu-debian")]) == 2
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["doctor", "--record", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("hipwizard: error:") == 4 and "Traceback" not in err


def _fake_tool(folder, name, body):
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_hanging_and_missing_tools_are_statuses(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "rocminfo", "sleep 30")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    runner = SubprocessRunner(extra_dirs=())
    probes = (Probe("rocminfo", ("rocminfo",)), Probe("nvidia-smi", ("no-such-nvidia-smi-xyz",)))
    results = run_probes(runner, timeout=0.5, probes=probes)
    assert results["rocminfo"].status == "timeout" and results["nvidia-smi"].status == "missing"


def test_hang_shows_in_the_report(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "rocminfo", "sleep 30")
    _fake_tool(tmp_path, "hipconfig", "echo 6.2.41133-dd7f95766")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")

    class NoPython(SubprocessRunner):  # keep this test fast: skip the two torch-importing probes
        def run(self, argv, **kw):
            if "pyprobe" in " ".join(argv) or argv[0].endswith("ds_report"):
                return super().run(["no-such-tool-xyz"], **kw)
            return super().run(argv, **kw)

    report = diagnose(NoPython(extra_dirs=()), timeout=0.5)
    probes = {c.id: c for c in report.checks}["probes"]
    assert probes.status == "warn" and "did not answer within 0.5 s" in probes.found


@pytest.mark.slow
def test_record_writes_a_replayable_directory(tmp_path):
    out = tmp_path / "ticket"
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    proc = subprocess.run([sys.executable, "-m", "hipwizard", "doctor", "--record", str(out), "--no-save", "--timeout", "60"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert (out / "rocminfo.txt").is_file() and (out / "python_-m_hipwizard.doctor.pyprobe.txt").is_file()
    assert "attach that folder" in proc.stdout
    live = json.loads((out / "doctor-report.json").read_text())
    replayed = diagnose(__import__("hipwizard.doctor.probe.replay", fromlist=["x"]).ReplayRunner(out)).to_dict()
    assert [c["status"] for c in replayed["checks"]] == [c["status"] for c in live["checks"]]


def test_probing_says_each_tool_on_stderr_when_it_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    """A live doctor in a log or a pipe: a line when probing starts and one per tool as it answers (stdout
    keeps the JSON alone); --quiet shows none. (A replay/paste is instant and stays quiet.)"""
    import hipwizard.doctor as doctor

    monkeypatch.setattr(doctor, "open_source", lambda **_: doctor.Source(doctor.ReplayRunner(ENVS / "mi300x-8x-rocm62")))
    assert main(["doctor", "--json", "--no-save"]) in (0, 1)
    out, err = capsys.readouterr()
    assert json.loads(out)["origin"] == "live"
    lines = err.splitlines()
    assert lines[0].startswith("hipwizard: probing ") and "--quiet" in lines[0]
    answered = [line for line in lines if line.endswith(" answered")]
    assert len(answered) >= 10 and any(": rocminfo answered" in line for line in answered)
    assert main(["doctor", "--json", "--no-save", "--quiet"]) in (0, 1)
    assert "probing" not in capsys.readouterr().err
    assert main(["doctor", "--replay", str(ENVS / "mi300x-8x-rocm62"), "--no-save"]) in (0, 1)
    assert "answered" not in capsys.readouterr().err
