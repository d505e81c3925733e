"""The recording format, the ReplayRunner and bad recordings: garbage, truncated, binary files."""

from __future__ import annotations

import shutil
import sys

from hipwizard.doctor.pipeline import diagnose
from hipwizard.doctor.probe.replay import (
    RecordingRunner,
    ReplayRunner,
    format_recording,
    read_recording,
    slug,
)
from hipwizard.runner import RunResult, SubprocessRunner
from tests.doctor.conftest import ENVS


def test_slug_is_portable():
    assert slug(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"]) == \
        "rocm-smi_--showproductname_--showmeminfo_vram_--json"
    assert slug(["cat", "/opt/rocm/.info/version"]) == "cat_opt_rocm_.info_version"
    assert slug([sys.executable, "-m", "hipwizard.doctor.pyprobe"]) == "python_-m_hipwizard.doctor.pyprobe"
    assert slug(["/opt/rocm/bin/rocminfo"]) == "rocminfo"


def test_record_then_replay_round_trip(tmp_path):
    rec = RecordingRunner(SubprocessRunner(), tmp_path)
    live = rec.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    rec.run(["definitely-missing-tool-xyz"])
    again = rec.run([sys.executable, "-c", "print('second')"])
    replay = ReplayRunner(tmp_path)
    got = replay.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (got.status, got.returncode, got.stdout, got.stderr) == (live.status, 3, "out\n", "err\n")
    assert replay.run(["definitely-missing-tool-xyz"]).status == "missing"
    assert replay.run([sys.executable, "-c", "print('second')"]).stdout == again.stdout
    assert replay.run(["never-ran"]).status == "error"
    assert replay.which("definitely-missing-tool-xyz") is None


def test_second_call_reads_the_indexed_file_then_repeats(tmp_path):
    (tmp_path / "tool.txt").write_text(format_recording(RunResult(("tool",), "ok", 0, "one\n")))
    (tmp_path / "tool~2.txt").write_text(format_recording(RunResult(("tool",), "ok", 0, "two\n")))
    r = ReplayRunner(tmp_path)
    assert [r.run(["tool"]).stdout for _ in range(3)] == ["one\n", "two\n", "two\n"]


def test_shared_fixture_layout_is_a_recording():
    rec = read_recording(ENVS.parent / "rocm" / "rocm-smi-debian523-nogpu.txt")
    assert rec.result.status == "ok" and rec.result.stdout.strip() == ""
    assert "Driver not initialized" in rec.result.stderr and "source" in rec.notes


def test_garbage_truncated_and_binary_recordings_give_clear_statuses(tmp_path):
    d = tmp_path / "bad"
    shutil.copytree(ENVS / "mi300x-8x-rocm62", d)
    (d / "rocminfo.txt").write_bytes(b"\x00\x01\xff\xfe" * 500)  # binary
    (d / "rocm-smi.txt").write_text("# exit code: banana\n}{ not a table")  # garbage
    text = (ENVS / "mi300x-8x-rocm62" / "ds_report.txt").read_text()
    (d / "ds_report.txt").write_text(text[: len(text) // 3])  # truncated
    (d / "collect_env.txt").write_bytes(b"\xff\xfe\x00garbage")
    report = diagnose(ReplayRunner(d))
    c = {x.id: x for x in report.checks}
    assert c["gpu"].status == "fail" and report.env.gpus == []
    assert c["probes"].status == "warn"
    assert "looks binary" in c["probes"].found
    assert "not a number" in c["probes"].found
    assert c["torch"].status == "warn"  # no torch facts: unknown, not a crash
