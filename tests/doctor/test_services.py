"""The Doctor's services, the one path both faces take: sources, diagnose (progress, saving), export."""

from __future__ import annotations

import json

import pytest

from hipwizard.doctor import services
from hipwizard.doctor.probe.replay import RecordingRunner, ReplayRunner
from hipwizard.doctor.probe.tools import default_probes
from hipwizard.doctor.state import load_report
from hipwizard.errors import UserError
from hipwizard.progress import Progress
from hipwizard.workspace import Workspace
from tests.doctor.conftest import ENVS


def test_diagnose_a_replay_saves_the_report_and_reports_each_probe(tmp_path):
    ws = Workspace(tmp_path)
    seen: list[Progress] = []
    result = services.diagnose(ws, services.open_source(replay=ENVS / "mi300x-8x-rocm62"), progress=seen.append)
    assert result.report.origin == "replay of mi300x-8x-rocm62" and not result.report.failed
    assert result.save_error == ""
    assert load_report(ws).summary() == result.report.summary()
    total = len(default_probes())
    assert [p.done for p in seen] == list(range(1, total + 1))
    assert seen and all(p.stage == "probing" and p.total == total and p.item for p in seen)
    assert seen[-1].finished


def test_without_a_workspace_nothing_is_saved(tmp_path):
    result = services.diagnose(None, services.open_source(replay=ENVS / "nogpu-debian"))
    assert result.report.failed and not (tmp_path / ".hipwizard").exists()


def test_a_workspace_that_cannot_be_written_is_a_value_not_an_exception(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".hipwizard").write_text("a file where the state folder should be")
    result = services.diagnose(Workspace(root), services.open_source(replay=ENVS / "nogpu-debian"))
    assert result.report.checks and result.save_error


def test_a_broken_progress_display_does_not_lose_the_report(tmp_path):
    def gone(_p):
        raise RuntimeError("Event loop is closed")

    result = services.diagnose(None, services.open_source(replay=ENVS / "nogpu-debian"), progress=gone)
    assert result.report.checks


def test_recording_writes_the_report_beside_the_outputs(tmp_path):
    folder = tmp_path / "ticket"
    folder.mkdir()
    source = services.Source(RecordingRunner(ReplayRunner(ENVS / "mi300x-8x-rocm62"), folder), "live",
                             record_dir=folder)
    result = services.diagnose(None, source)
    saved = json.loads((folder / services.RECORDED_REPORT_FILE).read_text())
    assert saved["summary"] == result.report.to_dict()["summary"]
    assert (folder / "rocminfo.txt").is_file()


def test_open_source_refuses_folders_that_cannot_serve(tmp_path):
    (tmp_path / "junk.bin").write_bytes(b"\x00")
    with pytest.raises(UserError, match="no recorded outputs"):
        services.open_source(replay=tmp_path)
    with pytest.raises(UserError, match="not a directory"):
        services.open_source(replay=tmp_path / "nope")
    (tmp_path / "rocminfo.txt").write_text("x")
    with pytest.raises(UserError, match="already holds recordings"):
        services.open_source(record=tmp_path)
    fresh = services.open_source(record=tmp_path / "new")
    assert fresh.record_dir == tmp_path / "new" and fresh.record_dir.is_dir() and fresh.origin == "live"
    assert services.open_source().origin == "live"


def test_workspace_source_replays_the_folder_its_state_names(tmp_path):
    ws = Workspace(tmp_path)
    assert services.workspace_source(ws).origin == "live"
    ws.update_state("doctor", replay_dir=str(ENVS / "nogpu-debian"))
    assert services.workspace_source(ws).origin == "replay of nogpu-debian"
    assert services.diagnose(ws).report.origin == "replay of nogpu-debian"
    ws.update_state("doctor", replay_dir=str(tmp_path / "gone"))
    assert services.workspace_source(ws).origin == "live"


def test_source_of_a_ready_runner_names_a_replay():
    assert services.Source.of(ReplayRunner(ENVS / "nogpu-debian")).origin == "replay of nogpu-debian"

    class Live:
        def run(self, argv, **kw): ...

        def which(self, name): ...

    assert services.Source.of(Live()).origin == "live"


def test_export_report_saves_the_text_or_says_why_not(tmp_path):
    ws = Workspace(tmp_path)
    report = services.diagnose(None, services.open_source(replay=ENVS / "mi300x-8x-rocm62")).report
    exported = services.export_report(ws, report)
    assert exported.error == "" and exported.path.read_text() == exported.text
    assert "✔ ok   GPU: 8 × AMD Instinct MI300X" in exported.text
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".hipwizard").write_text("not a folder")
    failed = services.export_report(Workspace(blocked), report)
    assert failed.error and failed.text == exported.text


def test_a_reports_counts_are_a_record_and_its_json_keeps_the_status_words():
    """``DoctorReport.counts`` crosses into state.summarize, the summary line and the JSON: a record read by
    attribute (a dict let a key typo through), written with the status words ("n/a") only at the JSON edge."""
    from hipwizard.doctor import CheckCounts, diagnose, open_source

    report = diagnose(None, open_source(replay=ENVS / "nogpu-debian")).report
    counts = report.counts
    assert isinstance(counts, CheckCounts) and counts.fail >= 1 and counts.not_applicable >= 1
    total = counts.ok + counts.warn + counts.fail + counts.not_applicable + counts.unknown
    assert total == len(report.checks) > 0
    assert report.to_dict()["counts"] == {"ok": counts.ok, "warn": counts.warn, "fail": counts.fail,
                                          "n/a": counts.not_applicable, "unknown": counts.unknown}
    assert report.summary().startswith(f"{counts.ok} ok, {counts.warn} warn, {counts.fail} fail, "
                                       f"{counts.not_applicable} n/a")
