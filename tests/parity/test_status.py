from __future__ import annotations

from hipwizard.parity.compare.result import Comparison, LayerResult
from hipwizard.parity.compare.tolerances import resolve
from hipwizard.parity.demo import prepare
from hipwizard.parity.state import latest_comparison, record_comparison, summarize
from hipwizard.workspace import Workspace


def _comp(verdict: str) -> Comparison:
    return Comparison({"dtype": "fp64", "device": "cpu"}, {"dtype": "bf16", "device": "cuda"}, resolve("bf16").as_dict(),
                      [LayerResult("a", 0, [2], "pass"), LayerResult("b", 1, [2], verdict)],
                      first_divergent="b" if verdict != "pass" else None)


def test_summary_follows_the_last_comparison(tmp_path):
    ws = Workspace(tmp_path)
    assert summarize(ws).state == "not started"
    prepare(ws)
    assert "press D" in summarize(ws).summary
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


def test_demo_flag_and_curves_spec_through_the_state_owner(tmp_path):
    from hipwizard.parity.state import curves_spec, is_demo, mark_demo, record_curves

    ws = Workspace(tmp_path)
    assert not is_demo(ws) and curves_spec(ws) is None
    mark_demo(ws)
    assert is_demo(ws)
    other = Workspace(tmp_path / "other")
    other.touch(demo=True)  # the demo workspace as a whole
    assert is_demo(other)
    record_curves(ws, "/runs/a", "/runs/b", 0.3, 0.05)
    spec = curves_spec(ws)
    assert (spec.run_a, spec.run_b, spec.smoothing, spec.threshold) == ("/runs/a", "/runs/b", 0.3, 0.05)
    ws.update_state("parity", curves={"a": "/runs/a"})  # damaged: no second run
    assert curves_spec(ws) is None
