"""What the review shows of a file's flags (issue 32): measured precision orders them, a budget folds the rest."""

from __future__ import annotations

import pytest

from hipwizard import port
from hipwizard.cli import main
from hipwizard.port.build.ahead import flagged_lines
from hipwizard.port.model import Diagnostic, FileTranslation, Hunk, RiskFlag, hand_edit_lines
from hipwizard.port.risk import budget
from hipwizard.port.risk.divergence import _grid_32bit

TABLE = {"QUIET": {"places": 50, "near": 1, "precision": 0.02},
         "MIDDLE": {"places": 40, "near": 12, "precision": 0.3},
         "PRECISE": {"places": 30, "near": 27, "precision": 0.9}}


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setattr(budget, "measured", lambda: TABLE)
    monkeypatch.setattr(budget, "PER_KIND", 2)
    monkeypatch.setattr(budget, "QUIET_PER_KIND", 1)
    monkeypatch.setattr(budget, "PER_FILE", 3)
    monkeypatch.setattr(budget, "PRECISE_AT", 0.6)
    monkeypatch.setattr(budget, "QUIET_MIN_PLACES", 5)


def _flag(kind: str, line: int) -> RiskFlag:
    return RiskFlag(kind, "med", f"{kind} reason", "hint", "src", line)


def _file(untouched: list[RiskFlag], hunks: list[Hunk] | None = None) -> FileTranslation:
    return FileTranslation("a.cu", "", "", "builtin", hunks=hunks or [], untouched_flags=untouched)


def test_the_asset_says_how_it_was_measured_and_holds_kinds():
    kinds = list(budget.measured().values())
    assert kinds and all(0.0 <= v["precision"] <= 1.0 and v["near"] <= v["places"] for v in kinds)
    assert "amd_divergence.py" in budget.ASSET.read_text(encoding="utf-8")


def test_a_quiet_kind_becomes_notes_on_the_original_lines(table):
    # a hunk above (2 lines became 3) shifts the untouched lines below it by one
    hunk = Hunk("a.cu", 2, ["a", "b"], 2, ["a", "b", "c"], hunk_id="h")
    ft = _file([_flag("QUIET", n) for n in (11, 21)], [hunk])
    assert budget.apply_budget([ft]) == 0
    assert not ft.untouched_flags and ft.stats["flags_demoted"] == 2
    assert [(d.kind, d.name, d.line) for d in ft.diagnostics] == [("warning", "QUIET", 10), ("warning", "QUIET", 20)]
    assert "QUIET reason" in ft.diagnostics[0].message and "a note" in ft.diagnostics[0].message


def test_with_demotion_off_a_quiet_kind_shows_once_per_file_and_names_the_lines_it_folded(table, monkeypatch):
    monkeypatch.setattr(budget, "DEMOTE_QUIET", False)
    ft = _file([_flag("QUIET", n) for n in (10, 20, 30, 40)])
    assert budget.apply_budget([ft]) == 3
    assert [f.line for f in ft.untouched_flags] == [10]
    assert "also lines 20, 30, 40 in this file" in ft.untouched_flags[0].reason
    assert ft.stats["flags_folded"] == 3


def test_a_precise_kind_has_its_own_larger_budget(table, monkeypatch):
    monkeypatch.setattr(budget, "PRECISE_PER_KIND", 6)
    ft = _file([_flag("PRECISE", n) for n in range(10, 90, 10)] + [_flag("MIDDLE", n) for n in (100, 110, 120)])
    assert budget.apply_budget([ft]) == 3  # 2 PRECISE lines over its 6; MIDDLE keeps 2 of its 3 (the first and the last)
    # six of the eight, spread over the file (the first and the last among them)
    assert [f.line for f in ft.untouched_flags if f.rule_id == "PRECISE"] == [10, 20, 40, 50, 70, 80]
    assert [f.line for f in ft.untouched_flags if f.rule_id == "MIDDLE"] == [100, 120]


def test_a_run_of_neighbouring_lines_is_one_place(table):
    ft = _file([_flag("MIDDLE", n) for n in (10, 11, 12, 14, 40)])
    assert budget.apply_budget([ft]) == 3
    assert [f.line for f in ft.untouched_flags] == [10, 40]
    assert "also lines 11, 12, 14" in ft.untouched_flags[0].reason


def test_the_file_budget_goes_to_the_more_precise_kinds_and_every_kind_still_shows(table):
    monkeypatch_free = [_flag("MIDDLE", n) for n in (10, 20, 30)] + [_flag("UNKNOWN", n) for n in (70, 80, 90)]
    ft = _file(monkeypatch_free + [_flag("OTHER", 200)])
    TABLE["OTHER"] = {"places": 10, "near": 2, "precision": 0.2}
    try:
        budget.apply_budget([ft])
    finally:
        del TABLE["OTHER"]
    shown = [(f.rule_id, f.line) for f in ft.untouched_flags]
    # UNKNOWN (unmeasured: 0.5) ranks above MIDDLE (0.3): two places; MIDDLE gets the last one; OTHER still shows once
    assert [line for kind, line in shown if kind == "UNKNOWN"] == [70, 90]
    assert [line for kind, line in shown if kind == "MIDDLE"] == [10]
    assert [line for kind, line in shown if kind == "OTHER"] == [200]


def test_hunk_flags_are_ordered_most_precise_kind_first_and_folded_like_the_others(table):
    hunks = [Hunk("a.cu", n, ["x"], n, ["y"], flags=[_flag("MIDDLE", n), _flag("PRECISE", n)], hunk_id=str(n))
             for n in (3, 9, 15)]
    ft = _file([], hunks)
    budget.apply_budget([ft])
    assert [f.rule_id for f in hunks[0].flags] == ["PRECISE", "MIDDLE"]
    # MIDDLE's room of 2: the first and the last hunk; the middle one's place folded into the first
    assert [f.rule_id for f in hunks[1].flags] == ["PRECISE"]
    assert [f.rule_id for f in hunks[2].flags] == ["PRECISE", "MIDDLE"]
    assert "also line 9" in hunks[0].flags[1].reason


def test_the_translate_service_shows_the_budgeted_flags(tmp_path, table):
    src = tmp_path / "src"
    src.mkdir()
    # six lines of a quiet kind in one file: notes, no flag (fails without the service's budget)
    (src / "k.cu").write_text("".join(f"__global__ void k{n}(int* x) {{ x[0] = threadIdx.x & 31; }}\n"
                                      for n in range(6)))
    TABLE["LANE_MASK_31"] = {"places": 50, "near": 0, "precision": 0.0}
    try:
        result = port.translate(None, src, tmp_path / "out", check=False)
    finally:
        del TABLE["LANE_MASK_31"]
    ft = result.report.files[0]
    lanes = [f for f in ft.untouched_flags if f.rule_id == "LANE_MASK_31"]
    lanes += [f for h in ft.hunks for f in h.flags if f.rule_id == "LANE_MASK_31"]
    notes = [d for d in ft.diagnostics if d.kind == "warning" and d.name == "LANE_MASK_31"]
    assert not lanes and len(notes) == 6 and ft.stats["flags_demoted"] == 6


def test_a_wide_index_without_a_grid_stride_loop_flags_the_index_and_its_early_returns():
    lines = ["__global__ void k(float* y, int64_t n) {", "  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;",
             "  if (i >= n) {", "    return;", "  }", "  y[i] = 0;", "}",
             "__global__ void s(float* y, int64_t n) {",
             "  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {",
             "    y[i] = 0;", "  }", "}"]
    # the index and the close of the loop; the early return (a continue) is within 3 lines of the index: one place
    assert _grid_32bit(lines) == [1, 6]
    far = [*lines[:2], *["  y[0] += 1;"] * 4, *lines[2:7]]  # the return 6 lines below the index is a place of its own
    assert _grid_32bit(far) == [1, 7]  # and the close, 3 lines below the return, is the same place
    # a 2-D block: an int row index still launches rows x blockDim.x threads (FBGEMM's quantize_fused_8bit_rowwise)
    rows = ["__global__ void q(float* y, int n) {", "  const int row = (int)blockIdx.x * blockDim.y + threadIdx.y;",
            "  y[row] = 0;", "}"]
    assert _grid_32bit(rows) == [1]
    assert _grid_32bit([r.replace("blockDim.y + threadIdx.y", "blockDim.x + threadIdx.x") for r in rows]) == []


def test_a_long_file_gets_room_in_proportion_to_its_lines(table, monkeypatch):
    monkeypatch.setattr(budget, "KIND_PER_KLINE", 2)
    monkeypatch.setattr(budget, "FILE_PER_KLINE", 6)
    short = _file([_flag("MIDDLE", n) for n in range(10, 110, 10)])
    long = FileTranslation("b.cu", "", "\n" * 3000, "builtin", untouched_flags=[_flag("MIDDLE", n)
                                                                                 for n in range(10, 110, 10)])
    budget.apply_budget([short, long])
    assert len(short.untouched_flags) == 2 and len(long.untouched_flags) == 6  # 2 a kind per thousand lines


def test_a_quiet_kind_on_an_include_line_stays_a_flag(table):
    # llm.c's dev/cuda: '#include <cooperative_groups/reduce.h>' is a build break however quiet its kind is
    text = "#include <cooperative_groups/reduce.h>\nint x;\nint y;\n"
    ft = FileTranslation("a.cu", text, text, "builtin", untouched_flags=[_flag("QUIET", 1), _flag("QUIET", 3)])
    budget.apply_budget([ft])
    assert [f.line for f in ft.untouched_flags] == [1] and "also line 3" in ft.untouched_flags[0].reason


def test_a_quiet_kind_on_a_hunk_keeps_one_flag_there(table):
    hunk = Hunk("a.cu", 5, ["x"], 5, ["y"], flags=[_flag("QUIET", 5)], hunk_id="h")
    ft = _file([_flag("QUIET", 20)], [hunk])
    budget.apply_budget([ft])
    assert [f.rule_id for f in hunk.flags] == ["QUIET"] and "also line 20" in hunk.flags[0].reason
    assert not ft.untouched_flags


def test_the_summary_lists_rules_most_telling_kind_first(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "measured", lambda: {"SYNC_WARP_BUILTINS": {"places": 9, "near": 9, "precision": 0.9},
                                                     "FULL_MASK_32": {"places": 9, "near": 3, "precision": 0.3}})
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("__global__ void k(float* x) { x[0] = __shfl_xor_sync(0xffffffff, x[0], 1); }\n")
    rules = list(port.translate(None, src, tmp_path / "out", check=False).report.summary()["flags_by_rule"])
    assert rules.index("SYNC_WARP_BUILTINS") < rules.index("FULL_MASK_32")  # alphabetical order says the opposite


def test_a_kind_past_its_room_shows_places_spread_over_the_file(table):
    ft = _file([_flag("MIDDLE", n) for n in (10, 20, 30, 40, 50)])
    budget.apply_budget([ft])
    # room 2: the first and the last place stand for the others, not the first two
    assert [f.line for f in ft.untouched_flags] == [10, 50]


def _api(line: int, name: str, kind: str = "unsupported") -> Diagnostic:
    return Diagnostic(kind, name, line, f"{name} has no HIP counterpart")  # type: ignore[arg-type]


def test_repeated_api_diagnostics_fold_like_a_kind_and_every_line_still_needs_a_hand_edit(table):
    # unsupported names on 10-12 (one run, two on 11), 30, 50, 70: four places for a room of two (PER_KIND: the
    # kind is unmeasured here, under PRECISE_AT), spread: 10 and 70 shown, the rest folded into the place above
    diags = [_api(10, "A"), _api(11, "B"), _api(11, "C"), _api(12, "D"), _api(30, "E"), _api(50, "F"), _api(70, "G"),
             _api(40, "cuCtxGetDevice", "deprecated"), Diagnostic("warning", "QUIET", 5, "a note")]
    ft = _file([])
    ft.diagnostics = list(diags)
    budget.apply_budget([ft])
    shown = [(d.kind, d.line) for d in ft.diagnostics if not d.folded_into]
    assert shown == [("unsupported", 10), ("unsupported", 70), ("deprecated", 40), ("warning", 5)]
    assert {(d.line, d.folded_into) for d in ft.diagnostics if d.folded_into} == {(11, 10), (12, 10), (30, 10), (50, 10)}
    assert ft.stats["api_lines_folded"] == 4
    # folded, not lost: every line still counts as one that needs a hand edit, and the shown one names them
    assert [d.name for d in ft.diagnostics] == [d.name for d in diags]
    assert hand_edit_lines({}, {"a.cu": ft.diagnostics})["api"] == 6
    head = ft.diagnostics[0]
    assert port.fold_note(head, ft.diagnostics) == \
        " (also lines 11 B + C, 12 D, 30 E, 50 F in this file: each needs a hand edit)"
    assert port.fold_note(ft.diagnostics[6], ft.diagnostics) == ""  # 70 stands for no other line
    # the review file keeps where a folded line is shown; a shown one's JSON is as it was
    assert [Diagnostic.from_dict(d.to_dict()) for d in ft.diagnostics] == ft.diagnostics
    assert "folded_into" not in head.to_dict() and ft.diagnostics[1].to_dict()["folded_into"] == 10


def test_without_the_budget_every_api_diagnostic_is_listed(table, monkeypatch):
    monkeypatch.setattr(budget, "ENABLED", False)
    ft = _file([])
    ft.diagnostics = [_api(n, f"N{n}") for n in (10, 30, 50, 70)]
    budget.apply_budget([ft])
    assert [d.folded_into for d in ft.diagnostics] == [0, 0, 0, 0]


def test_the_port_lists_one_line_for_a_folded_run_of_unsupported_calls_and_counts_them_all(tmp_path, capsys, table):
    src = tmp_path / "src"
    src.mkdir()
    # eight lines calling a driver API HIP lacks, 5 lines apart: eight places, a room of two (fails without folding)
    (src / "k.cu").write_text("".join(f"void f{n}(CUfunction g) {{ cuFuncSetCacheConfig(g, "
                                      f"CU_FUNC_CACHE_PREFER_L1); }}\n\n\n\n\n" for n in range(8)))
    result = port.translate(None, src, tmp_path / "out", check=False)
    ft = result.report.files[0]
    unsupported = [d for d in ft.diagnostics if d.kind == "unsupported" and d.name == "cuFuncSetCacheConfig"]
    assert len(unsupported) == 8 and sum(1 for d in unsupported if not d.folded_into) == 2
    assert result.report.summary()["hand_edit_lines"]["api"] >= 8
    # the compile check still predicts an error on every one of those lines
    said = flagged_lines(result.review)["k.cu"]
    assert sum(1 for what in said.values() if "unsupported: cuFuncSetCacheConfig" in what) == 8
    assert main(["hipify", str(src), "--out", str(tmp_path / "out2"), "--workspace", str(tmp_path),
                 "--backend", "builtin"]) == 0
    out = capsys.readouterr().out
    listed = [ln for ln in out.splitlines() if ": unsupported: cuFuncSetCacheConfig" in ln]
    assert len(listed) == 2 and "also lines 6 cuFuncSetCacheConfig" in listed[0] and "hand edit" in listed[0]


def test_a_kind_on_few_lines_of_a_file_is_listed_whole(table):
    # two too-new APIs on neighbouring lines: a run, but nothing repeated enough to fold (each keeps its own row)
    ft = _file([])
    ft.diagnostics = [_api(7, "cudaGetFuncBySymbol", "too_new"), _api(8, "cudaSetValidDevices", "too_new")]
    budget.apply_budget([ft])
    assert [d.folded_into for d in ft.diagnostics] == [0, 0] and "api_lines_folded" not in ft.stats
