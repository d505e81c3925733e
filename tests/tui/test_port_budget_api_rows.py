"""The Port screen's API rows after the review's budget folded repeated unsupported-API diagnostics (issue 32): one
row per shown place naming the lines folded into it, every line still counted as one that needs a hand edit."""

from __future__ import annotations

from hipwizard import port
from hipwizard.tui.port.results import api_options

# eight lines calling a driver API HIP lacks, 5 lines apart: eight places, more than a file's room for the kind
SOURCE = "".join(f"void f{n}(CUfunction g) {{ cuFuncSetCacheConfig(g, CU_FUNC_CACHE_PREFER_L1); }}\n\n\n\n\n"
                 for n in range(8))


def test_folded_unsupported_lines_have_no_row_of_their_own_and_still_count(tmp_path, monkeypatch):
    monkeypatch.setattr("hipwizard.port.risk.budget.PRECISE_PER_KIND", 2)
    monkeypatch.setattr("hipwizard.port.risk.budget.PER_KIND", 2)
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text(SOURCE)
    review = port.translate(None, src, tmp_path / "out", check=False).review
    review = port.ReviewState.load(review.path)  # what the review file keeps: where each folded line is shown
    rows = [str(o.prompt) for o in api_options(review)]
    places = [r for r in rows if r.strip().startswith("k.cu:")]
    assert rows and "cuFuncSetCacheConfig" in rows[0]  # the heading names every unsupported API
    assert [r.split()[0] for r in places] == ["k.cu:1", "k.cu:36"]  # the first and the last place (spread)
    assert "also lines 6 cuFuncSetCacheConfig, 11 cuFuncSetCacheConfig" in places[0] and "hand edit" in places[0]
    assert review.api_counts("unsupported")["cuFuncSetCacheConfig"] == 8
    assert review.hand_edit_lines()["api"] == 8
