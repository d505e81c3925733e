"""The report on the one job protocol (hipwizard.jobs): the worker's result names the files it wrote, and a
refusal comes back as the service's own line (an error event), not as a scraped stderr line of the CLI."""

from __future__ import annotations

import pytest

from hipwizard.errors import UserError
from hipwizard.jobs import Job
from hipwizard.report.worker import MODULE, export
from hipwizard.workspace import Workspace


def test_export_writes_through_the_worker_and_returns_the_files(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    out = ws.root / "r.md"
    progress = []
    assert export(ws, out, progress=progress.append) == [out]
    assert "The doctor has not run" in out.read_text()


def test_a_refusal_is_the_services_line_and_a_bad_request_is_named(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    (ws.root / "folder").mkdir()
    with pytest.raises(UserError) as err:
        export(ws, ws.root / "folder")
    assert "is a folder" in str(err.value) and not str(err.value).startswith("hipwizard:")
    with pytest.raises(UserError, match="a report needs workspace and out"):
        Job(MODULE, {"workspace": 3}, what="report").run()


def test_a_worker_past_its_time_is_stopped_and_said(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    job = Job(MODULE, {"workspace": str(ws.root), "out": str(ws.root / "r.html")}, what="report", timeout_s=0.05)
    with pytest.raises(UserError, match="the report took over 0.05 s and was stopped"):
        job.run()
    assert job.process.returncode < 0


def test_a_demo_step_runs_its_service_in_the_worker_and_a_failure_is_its_line(tmp_path, monkeypatch):
    """The demo fill speaks the job protocol, no CLI argv: the port step's own refusal (a CUDA project that
    is gone) comes back as the service's line; a step name the worker does not know is a bad request."""
    from hipwizard.port.state import record_link
    from hipwizard.report import demo

    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    record_link(ws, tmp_path / "gone", tmp_path / "out")
    assert demo.needed(ws) == ["doctor", "port", "parity", "train"]
    monkeypatch.setattr(demo, "needed", lambda ws: ["port"])
    seen = []
    with pytest.raises(UserError) as err:
        demo.fill(ws, progress=seen.append)
    line = str(err.value)
    assert line.startswith("the demo's port step failed: ") and "gone" in line and "hipwizard: error" not in line
    assert seen and seen[0].stage == "demo: port"
    with pytest.raises(UserError, match="a demo step needs workspace and step"):
        Job(MODULE, {"job": "demo-step", "step": "format-disk", "workspace": str(ws.root)}, what="demo").run()
