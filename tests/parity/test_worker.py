"""The subprocess the dashboard runs: JSON lines on stdout, errors as events, torch only in there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.parity.parity_captures import layer_outputs, write_capture


def _run(args, cwd, env=None):
    proc = subprocess.run([sys.executable, "-m", "hipwizard.parity.worker", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=env)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_worker_compare_files_and_error_event(tmp_path):
    out = layer_outputs()
    a = write_capture(tmp_path / "a.safetensors", out)
    rc, events = _run(["compare", str(a), str(a), "--workspace", str(tmp_path)], tmp_path)
    assert rc == 0 and events[-1]["event"] == "result" and events[-1]["comparison"]["verdict"] == "pass"
    assert events[-1]["report"].endswith(".json")
    (tmp_path / "cut.safetensors").write_bytes(a.read_bytes()[:30])
    rc, events = _run(["compare", str(a), str(tmp_path / "cut.safetensors"), "--no-save"], tmp_path)
    assert rc == 2 and events[-1]["event"] == "error" and "truncated" in events[-1]["message"]


@pytest.mark.slow
def test_worker_demo_same_machine_streams_progress(tmp_path, demo_assets):
    import os

    env = dict(os.environ, HIPWIZARD_CACHE=str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "demo-v1").symlink_to(demo_assets.root)  # reuse the session's demo build
    rc, events = _run(["compare", "--demo", "--reference", "cpu", "--dtype", "bf16", "--device", "cpu",
                       "--workspace", str(tmp_path)], tmp_path, env)
    stages = [e["stage"] for e in events if e["event"] == "progress"]
    assert rc == 0, events[-1]
    assert "reference (fp64, cpu)" in stages and "forward" in stages and stages[-1] == "compare"
    forward = [e for e in events if e.get("stage") == "forward" and e["total"]]
    assert forward[-1]["done"] == forward[-1]["total"] == 6
    assert events[-1]["comparison"]["candidate"]["dtype"] == "bf16"
