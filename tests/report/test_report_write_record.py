"""The write record (``last_write``) keeps the arch the compile check really used and its note: after a
gfx942 -> gfx940 fallback, the review file and the report name gfx940, not the arch that was asked for."""

from __future__ import annotations

import json
from pathlib import Path

from hipwizard.cli import main
from hipwizard.port.output.apply import apply
from hipwizard.port.review.model import WriteRecord
from hipwizard.port.review.state import ReviewState
from hipwizard.port.state import record_link
from hipwizard.runner import RunResult
from hipwizard.workspace import Workspace
from tests.port.review_factory import new_review
from tests.port.target import RecordingHipcc

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "hipcc"


class NoGfx942Hipcc(RecordingHipcc):
    """A hipcc that rejects gfx942 the way Debian's HIP 5.2 hipcc does (recorded output), compiles the rest."""

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        result = super().run(argv, timeout=timeout, env=env, cwd=cwd)
        if "gfx942" in self.archs[-1:]:
            return RunResult(tuple(argv), "failed", 1, "", (FIX / "invalid-target-gfx942.stderr.txt").read_text())
        return result


def test_a_fallback_check_is_recorded_with_the_arch_it_really_used_and_the_report_names_it(tmp_path, capsys):
    review = new_review(tmp_path)
    hipcc = NoGfx942Hipcc()
    report = apply(review, arch="gfx942", runner=hipcc)
    assert report.arch == "gfx940" and "gfx942" in hipcc.archs and hipcc.archs[-1] == "gfx940"
    saved = ReviewState.load(review.path).last_write
    assert isinstance(saved, WriteRecord)
    assert (saved.arch, saved.files, saved.compile_errors) == ("gfx940", 2, 0)
    assert "does not support gfx942" in saved.check_note and "gfx940" in saved.check_note
    on_disk = json.loads(review.path.read_text())["last_write"]
    assert on_disk["arch"] == "gfx940" and on_disk["check_note"] == saved.check_note

    ws = Workspace(tmp_path)
    record_link(ws, review.src, review.out)
    out = tmp_path / "report.md"
    assert main(["report", "--workspace", str(ws.root), "--out", str(out)]) == 0
    text = out.read_text()
    assert "compile check for gfx940: ✔ no errors" in text and "does not support gfx942" in text
    assert "compile check for gfx942" not in text


def test_a_write_without_a_check_says_so_and_old_records_still_load(tmp_path):
    review = new_review(tmp_path)
    apply(review, check=False)
    assert ReviewState.load(review.path).last_write == WriteRecord(revision=0, files=2)
    data = json.loads(review.path.read_text())
    data["last_write"] = {"revision": 3, "files": 1, "compile_errors": 2}  # written before arch/check_note
    review.path.write_text(json.dumps(data))
    assert ReviewState.load(review.path).last_write == WriteRecord(3, 1, 2)
    data["last_write"] = {"revision": "3", "files": 1}  # damaged: no record rather than a wrong one
    review.path.write_text(json.dumps(data))
    assert ReviewState.load(review.path).last_write is None
