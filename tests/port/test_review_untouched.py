"""Risks on lines the translation left unchanged, in the review state: stored per file (files without
hunks too), saved and loaded, counted, migrated from version 1 files, placed in the written file."""

from __future__ import annotations

import json

from hipwizard.port.model import RiskFlag, UntouchedRisk
from hipwizard.port.review.state import REVIEW_VERSION, ReviewState
from hipwizard.port.services import refresh
from tests.port.review_factory import risky_project, translation


def test_a_file_with_only_untouched_risks_is_stored_and_round_trips(tmp_path):
    state = risky_project(tmp_path)
    assert "include/common.cuh" in state.files and "include/common.cuh" not in state.by_file  # no hunks
    risks = state.untouched["include/common.cuh"]
    assert [(r.flag.rule_id, r.flag.line, r.code) for r in risks] == [
        ("WARP32_LITERAL", 4, "#define WARP_SIZE 32"), ("FULL_MASK_32", 5, "#define FULL_MASK 0xffffffff")]
    assert "main.cu" not in state.untouched
    data = json.loads(state.path.read_text())
    assert data["version"] == REVIEW_VERSION >= 2
    assert data["untouched"]["include/common.cuh"][0]["code"] == "#define WARP_SIZE 32"
    again = ReviewState.load(state.path)
    assert again.untouched == state.untouched and not again.needs_untouched
    assert "WARP32_LITERAL" in again.rule_ids()
    assert again.summary()["untouched"] == {"high": 2, "med": 0, "low": 0, "total": 2}


def test_version_1_file_loads_and_gets_its_untouched_risks_on_refresh(tmp_path):
    state = risky_project(tmp_path)
    state.decide([state.hunks[0].hunk_id], "accepted")
    state.save()
    data = json.loads(state.path.read_text())
    data["version"] = 1
    del data["untouched"]
    state.path.write_text(json.dumps(data))
    old = ReviewState.load(state.path)
    assert old.needs_untouched and old.untouched == {}
    assert refresh(None, old) is None  # sources unchanged: no reconcile, decisions kept
    assert old.untouched == state.untouched and old.decision(state.hunks[0].hunk_id).state == "accepted"
    again = json.loads(state.path.read_text())
    assert again["version"] == REVIEW_VERSION and "include/common.cuh" in again["untouched"]


def test_reconcile_recomputes_untouched_risks(tmp_path):
    state = risky_project(tmp_path)
    header = state.src / "include" / "common.cuh"
    header.write_text(header.read_text().replace("#define FULL_MASK 0xffffffff\n", ""))
    assert refresh(None, state) is not None
    assert [r.flag.rule_id for r in state.untouched["include/common.cuh"]] == ["WARP32_LITERAL"]
    assert ReviewState.load(state.path).untouched == state.untouched


def test_original_and_written_line_numbers_follow_the_hunks_above(tmp_path):
    original = "a();\nb();\nint lane = threadIdx.x & 31;\n"
    translated = "x();\ny();\nz();\nb();\nint lane = threadIdx.x & 31;\n"  # one line became three
    ft = translation("k.cu", original, translated)
    ft.untouched_flags = [RiskFlag("LANE_MASK_31", "high", "r", "h", "s", 5)]
    (risk,) = UntouchedRisk.of(ft)
    assert (risk.flag.line, risk.old_line, risk.code) == (5, 3, "int lane = threadIdx.x & 31;")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(original)
    state = ReviewState.create(tmp_path / "src", tmp_path / "out", [ft])
    assert state.written_line("k.cu", risk) == 3  # pending: the original is written
    state.decide([state.hunks[0].hunk_id], "accepted")
    assert state.written_line("k.cu", risk) == 5
