from __future__ import annotations

from hipwizard.parity.demo import prepare
from hipwizard.parity.report import Comparison, LayerResult
from hipwizard.parity.state import latest_comparison, record_comparison, summarize
from hipwizard.parity.tolerances import resolve
from hipwizard.workspace import Workspace


def _comp(verdict: str) -> Comparison:
    return Comparison({"dtype": "fp64", "device": "cpu"}, {"dtype": "bf16", "device": "cuda"}, resolve("bf16").as_dict(),
                      [LayerResult("a", 0, [2], "pass"), LayerResult("b", 1, [2], verdict)],
                      first_divergent="b" if verdict != "pass" else None)


def test_summary_follows_the_last_comparison(tmp_path):
    ws = Workspace(tmp_path)
    assert summarize(ws).state == "not started"
    prepare(ws)
    assert "press r" in summarize(ws).summary
    record_comparison(ws, _comp("pass"))
    assert summarize(ws).state == "done" and "2/2" in summarize(ws).summary
    record_comparison(ws, _comp("fail"))
    st = summarize(ws)
    assert st.state == "attention" and "divergence starts at b" in st.summary and "bf16 on cuda" in st.summary
    assert latest_comparison(ws).first_divergent == "b"
    assert ws.step_status("parity") == st


def test_damaged_report_is_skipped(tmp_path):
    ws = Workspace(tmp_path)
    first = record_comparison(ws, _comp("pass"))
    second = record_comparison(ws, _comp("fail"))
    second.write_text("{ not json")
    assert latest_comparison(ws).verdict == "pass"
    first.unlink()
    assert latest_comparison(ws) is None
