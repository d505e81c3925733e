"""The subprocess the dashboard runs: JSON lines on stdout, errors as events, torch only in there; and
``WorkerRun``, its other end (progress back as ``Progress`` values, the outcome, stop)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.requests import CompareOutcome, CompareRequest, demo_request
from hipwizard.parity.state import latest_comparison
from hipwizard.parity.worker import compare_in_worker
from hipwizard.workspace import Workspace
from tests.parity.parity_captures import layer_outputs, write_capture


def _run(payload, cwd, env=None):
    proc = subprocess.run([sys.executable, "-m", "hipwizard.parity.worker", json.dumps(payload)], capture_output=True,
                          text=True, cwd=cwd, timeout=300, env=env)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_worker_compare_files_and_error_event(tmp_path):
    a = write_capture(tmp_path / "a.safetensors", layer_outputs())
    request = CompareRequest(ref=a, cand=a).to_dict()
    rc, events = _run({"request": request, "workspace": str(tmp_path)}, tmp_path)
    assert rc == 0 and events[-1]["event"] == "result"
    outcome = CompareOutcome.from_dict(events[-1]["outcome"])
    assert outcome.comparison.verdict == "pass" and outcome.how == "two captures"
    assert str(outcome.report).endswith(".json") and outcome.report.is_file()
    (tmp_path / "cut.safetensors").write_bytes(a.read_bytes()[:30])
    request = CompareRequest(ref=a, cand=tmp_path / "cut.safetensors").to_dict()
    rc, events = _run({"request": request, "workspace": None}, tmp_path)
    assert rc == 2 and events[-1]["event"] == "error" and "truncated" in events[-1]["message"]
    rc, events = _run({"nonsense": 1}, tmp_path)
    assert rc == 2 and events[-1]["event"] == "error" and "bad worker request" in events[-1]["message"]


def test_worker_run_reports_outcome_and_records_the_workspace(tmp_path):
    a = write_capture(tmp_path / "a.safetensors", layer_outputs())
    b = write_capture(tmp_path / "b.safetensors", {k: v + 0.5 for k, v in layer_outputs().items()})
    seen = []
    ws = Workspace(tmp_path)
    outcome = compare_in_worker(CompareRequest(ref=a, cand=b), ws).run(seen.append)
    assert outcome.comparison.verdict == "fail" and outcome.exit_code == 1
    assert [p.stage for p in seen] == ["compare"]
    assert latest_comparison(ws).verdict == "fail"
    with pytest.raises(UserError, match="does not exist"):
        compare_in_worker(CompareRequest(ref=a, cand=tmp_path / "none.safetensors"), None).run()


def test_worker_run_stopped_before_it_starts(tmp_path):
    run = compare_in_worker(demo_request("bf16"), None)
    run.stop()
    with pytest.raises(UserError, match="stopped"):
        run.run()


@pytest.mark.slow
def test_worker_demo_same_machine_streams_progress(tmp_path, demo_assets):
    import os

    env = dict(os.environ, HIPWIZARD_CACHE=str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "demo-v1").symlink_to(demo_assets.root)  # reuse the session's demo build
    request = demo_request("bf16", "cpu").to_dict()
    rc, events = _run({"request": request, "workspace": str(tmp_path)}, tmp_path, env)
    stages = [e["stage"] for e in events if e["event"] == "progress"]
    assert rc == 0, events[-1]
    assert "reference (fp64, cpu)" in stages and "forward" in stages and stages[-1] == "compare"
    forward = [e for e in events if e.get("stage") == "forward" and e["total"]]
    assert forward[-1]["done"] == forward[-1]["total"] == 6 and forward[-1]["item"] == "lm_head"
    assert events[-1]["outcome"]["comparison"]["candidate"]["dtype"] == "bf16"


@pytest.mark.slow
def test_worker_run_stop_kills_the_worker_mid_run(tmp_path, demo_assets, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "demo-v1").symlink_to(demo_assets.root)
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    run = compare_in_worker(demo_request("fp32", "cpu"), Workspace(tmp_path))
    started = threading.Event()
    errors = []

    def wait():
        try:
            run.run(lambda _p: started.set())
        except UserError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=wait)
    thread.start()
    assert started.wait(120), "the worker reported no progress"
    run.stop()
    thread.join(30)
    assert not thread.is_alive() and errors == ["the comparison was stopped"]
    assert run.job.process.returncode is not None and run.job.process.returncode < 0  # killed, not finished
    assert latest_comparison(Workspace(tmp_path)) is None
