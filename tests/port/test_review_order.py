"""The review's flagged hunks, most telling first (issue 32 item 4): ordered by how often their kind marks real AMD
porting work, as measured on dual-target projects (``assets/risk_precision.yaml``), on the Port screen's
"flagged" filter and in ``review --summary``."""

from __future__ import annotations

import json

import pytest

from hipwizard.cli import main
from hipwizard.port import measured
from hipwizard.port.model import RiskFlag
from hipwizard.port.review.nav import ReviewNav
from hipwizard.port.review.state import ReviewState
from tests.port.review_factory import KERNEL, hipify_like, translation

TABLE = {"WARP32_LITERAL": {"places": 50, "near": 10, "precision": 0.2},
         "CUBLASLT": {"places": 40, "near": 36, "precision": 0.9},
         "DRIVER_JIT": {"places": 30, "near": 18, "precision": 0.6}}


def _flag(rule: str) -> RiskFlag:
    return RiskFlag(rule, "med", f"{rule} reason", "hint", "src")


def telling_review(tmp_path) -> ReviewState:
    """a.cu and b.cu (four hunks each): a.cu's first two hunks flagged WARP32_LITERAL / DRIVER_JIT, b.cu's
    WARP32_LITERAL / CUBLASLT (measured as in ``TABLE`` once ``port.measured.measured`` returns it)."""
    src = tmp_path / "src"
    src.mkdir()
    flags = {"a.cu": {0: _flag("WARP32_LITERAL"), 1: _flag("DRIVER_JIT")},  # a.cu first in file order
             "b.cu": {0: _flag("WARP32_LITERAL"), 1: _flag("CUBLASLT")}}
    files = []
    for rel, marks in flags.items():
        (src / rel).write_text(KERNEL)
        files.append(translation(rel, KERNEL, hipify_like(KERNEL), marks))
    state = ReviewState.create(src, tmp_path / "out", files)
    assert [len(state.by_file[f]) for f in ("a.cu", "b.cu")] == [4, 4]  # hunks 3 and 4 of each carry no flag
    state.save()
    return state


@pytest.fixture
def review(tmp_path, monkeypatch) -> ReviewState:
    monkeypatch.setattr(measured, "measured", lambda: TABLE)
    return telling_review(tmp_path)


def _where(review: ReviewState, i: int) -> tuple[str, int]:
    h = review.hunks[i]
    return h.file, review.by_file[h.file].index(i) + 1


def test_the_flagged_filter_starts_with_the_most_telling_hunk_and_says_so(review):
    nav = ReviewNav(review)
    assert [_where(review, i) for i in nav.view] == [(f, n) for f in ("a.cu", "b.cu") for n in (1, 2, 3, 4)]
    nav.set_filter("flagged")
    # b.cu holds the most telling hunk (CUBLASLT 0.9): its file first, its hunks most telling first; then a.cu's
    # DRIVER_JIT (0.6) before its WARP32_LITERAL (0.2)
    assert nav.files == ["b.cu", "a.cu"]
    assert [_where(review, i) for i in nav.view] == [("b.cu", 2), ("b.cu", 1), ("a.cu", 2), ("a.cu", 1)]
    assert nav.pos == 0  # it opens on the most telling hunk
    assert "most telling first" in nav.filter_label and nav.where().endswith("most telling first")
    assert nav.step(1) and _where(review, nav.view[nav.pos]) == ("b.cu", 1)
    # back to every hunk: file order again, staying on the same hunk
    nav.set_filter("all")
    assert _where(review, nav.view[nav.pos]) == ("b.cu", 1) and "most telling" not in nav.where()


def test_review_summary_lists_the_flagged_hunks_most_telling_first(review, capsys):
    assert main(["review", str(review.path), "--summary"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("    ⚑ ")]
    assert "flagged hunks, most telling first" in out
    assert listed == ["b.cu#2", "a.cu#2", "a.cu#1", "b.cu#1"]
    assert "CUBLASLT (med) 90%" in out
    assert main(["review", str(review.path), "--summary", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["flagged_order"]
    assert [(r["ref"], r["rule"], r["precision"]) for r in rows][:2] == [("b.cu#2", "CUBLASLT", 0.9),
                                                                          ("a.cu#2", "DRIVER_JIT", 0.6)]
