"""ReviewNav with risks on unchanged lines: files listed for them alone, the filters, counts."""

from __future__ import annotations

from hipwizard.port.review.nav import ReviewNav
from tests.port.review_factory import risky_project

HEADER = "include/common.cuh"


def test_a_file_without_hunks_but_with_risks_is_a_stop_with_nothing_to_decide(tmp_path):
    nav = ReviewNav(risky_project(tmp_path))
    assert nav.files == [HEADER, "main.cu"]
    assert nav.go_to_file(HEADER) and nav.current is None and nav.current_file == HEADER
    assert nav.where() == "no hunks in this file · 1/" + str(len(nav.view)) + " shown"
    assert nav.file_prompt(HEADER) == f"⚑ {HEADER}\n  2 manual edits"
    assert nav.step(1) and nav.current.file == "main.cu"
    assert nav.step(-1) and nav.current_file == HEADER
    assert not nav.step_pending(-1) and nav.step_pending(1) and nav.current.file == "main.cu"


def test_flagged_and_rule_filters_include_files_with_untouched_risks_only(tmp_path):
    review = risky_project(tmp_path)
    nav = ReviewNav(review)
    nav.go_to_file(HEADER)
    nav.set_filter("flagged")
    assert nav.files == [HEADER] and nav.current_file == HEADER  # main.cu's hunks carry no flag
    nav.set_filter("pending")
    assert HEADER not in nav.files and nav.files == ["main.cu"]
    assert "rule:FULL_MASK_32" in nav.filter_keys()
    nav.set_filter("rule:FULL_MASK_32")
    assert nav.files == [HEADER] and [r.flag.rule_id for r in nav.shown_risks(HEADER)] == ["FULL_MASK_32"]


def test_counts_of_a_file_with_hunks_include_its_untouched_risks(tmp_path):
    review = risky_project(tmp_path)
    # Give main.cu's hunks the header's risks as if they were its own unchanged lines.
    review.untouched = {**review.untouched, "main.cu": review.untouched[HEADER]}
    nav = ReviewNav(review)
    n = len(review.by_file["main.cu"])
    assert nav.file_prompt("main.cu") == f"○ main.cu\n  ○{n} ✔0 ✖0 · 2 manual"
    nav.set_filter("flagged")
    assert nav.files == [HEADER, "main.cu"] and nav.view and all(i < 0 for i in nav.view)  # shown for their risks only
