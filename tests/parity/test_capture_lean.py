"""``compare --reference cpu --triangle --lean`` (issue 34 item 3): every side sketched and kept in memory, full
tensors only for the rows the triangle flags; the deciding verdict of every row is the full comparison's."""

from __future__ import annotations

import pytest

from hipwizard.parity import lean, runs
from hipwizard.parity.compare.result import Comparison, LayerResult, Metrics, Triangle
from hipwizard.parity.requests import RunOptions, Subject


def _rows(comp: Comparison) -> list[tuple[str, str, bool]]:
    layers = comp.layers + (comp.backward.layers if comp.backward is not None else [])
    return [(layer.name, layer.verdict, layer.deciding_pass) for layer in layers]


@pytest.mark.slow
def test_lean_gives_the_full_verdict_of_every_row_on_the_demo(demo_assets):
    subject = Subject(model=demo_assets.model_dir)
    cases = {"correct": {}, "forward bug": {"perturb": {"model.layers.1.self_attn": 0.05}},
             "backward bug": {"perturb_grad": {"model.layers.1.mlp": 0.05}}}
    for case, faults in cases.items():
        opts = RunOptions(dtype="bf16", device="cpu", backward=True, triangle=True, **faults)
        full = runs.compare_same_machine(subject, opts)
        thin = lean.compare_lean(subject, opts)
        assert _rows(thin) == _rows(full), case  # same rows, same fixed verdicts, same deciding verdicts
        assert thin.verdict == full.verdict and thin.first_divergent == full.first_divergent, case
        assert (thin.backward.first_divergent_module == full.backward.first_divergent_module), case
        flagged = thin.timings["lean_flagged"]
        layers = thin.layers + thin.backward.layers
        sketched = [layer for layer in layers if layer.metrics and layer.metrics.sketch]
        if case == "correct":
            assert flagged == 0 and full.verdict == "pass"
        else:
            assert flagged >= 1 and full.verdict == "fail"
            # the failing rows were compared element by element: their per-element numbers are the full ones
            failing = [layer for layer in layers if not layer.deciding_pass]
            assert failing and all(not layer.metrics.sketch and layer.metrics.max_abs is not None for layer in failing)
            by_name = {layer.name: layer for layer in full.layers + full.backward.layers}
            assert failing and all(layer.metrics.max_abs == pytest.approx(by_name[layer.name].metrics.max_abs)
                                   for layer in failing)
        # every big row that passed clear of k stayed a sketch
        assert sketched and all(layer.deciding_pass for layer in sketched), case
    bug = lean.compare_lean(subject, RunOptions(dtype="bf16", device="cpu", backward=True, triangle=True,
                                                perturb_grad={"model.layers.1.mlp": 0.05}))
    by_name = {layer.name: layer for layer in bug.backward.layers}
    assert by_name["∂out model.layers.1.mlp"].deciding_pass and not by_name["∂in model.layers.1.mlp"].deciding_pass


def _sketch_row(name: str, ratio: float, k: float = 2.0) -> LayerResult:
    m = Metrics(cosine=1.0, max_abs=None, rel_l2=0.01 * ratio, outside_share=None, nan_count=0, inf_count=0,
                verdict="pass", sketch="count-sketch 8192")
    return LayerResult(name, 0, [2, 8, 64], "pass", metrics=m, triangle=Triangle(0.01 * ratio, 0.01, k))


def test_flagged_rows_are_the_failing_and_the_near_k_sketches():
    rows = [_sketch_row("clear", 1.2), _sketch_row("near", 1.8), _sketch_row("fails", 2.5),
            _sketch_row("far", 0.3)]
    whole = LayerResult("whole", 0, [4], "pass", metrics=Metrics(1.0, 0.0, 0.03, 0.0, 0, 0, "pass"),
                        triangle=Triangle(0.03, 0.01, 2.0))  # not a sketch: already element by element
    comp = Comparison({}, {}, {}, rows + [whole], triangle_k=2.0)
    assert [layer.name for layer in lean.flagged_rows(comp)] == ["near", "fails"]


def test_flagged_rows_include_sketches_near_the_fixed_bar():
    """A row clear of k whose sketched rel L2 or cosine sits near the fixed table's bar is re-run whole, so its
    fixed verdict is the full tensors' (a sketch estimates rel L2 within ~1%: 0.0198 could be 0.0202)."""
    near_rel = _sketch_row("near_rel", 1.0)
    near_rel.metrics.rel_l2 = 0.018  # within 20% of the 0.02 bar
    near_cos = _sketch_row("near_cos", 1.0)
    near_cos.metrics.cosine = 0.99925  # 1 - cos = 7.5e-4, within the margin of 1e-3
    clear = _sketch_row("clear", 1.0)
    clear.metrics.rel_l2, clear.metrics.cosine = 0.012, 0.9995
    comp = Comparison({}, {}, {"rel_l2_max": 0.02, "cosine_min": 0.999}, [near_rel, near_cos, clear], triangle_k=2.0)
    assert [layer.name for layer in lean.flagged_rows(comp)] == ["near_rel", "near_cos"]
    comp.tolerance = {}  # no fixed bar known: only the triangle decides what is flagged
    assert lean.flagged_rows(comp) == []


def test_lean_without_the_triangle_is_one_line_exit_2(demo_assets, capsys):
    from hipwizard.cli import main as cli_main

    rc = cli_main(["parity", "compare", "--reference", "cpu", "--model", str(demo_assets.model_dir), "--lean",
                   "--no-save"])
    err = capsys.readouterr().err
    assert rc == 2 and "--lean goes with --reference cpu --triangle" in err and "Traceback" not in err


def test_lean_cli_prints_counts_as_counts(demo_assets, capsys):
    """The forward-only lean compare through the CLI: its time/size line gives flagged rows and re-run modules as
    numbers, not seconds."""
    from hipwizard.cli import main as cli_main

    rc = cli_main(["parity", "compare", "--reference", "cpu", "--model", str(demo_assets.model_dir), "--triangle",
                   "--lean", "--no-save"])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("time/size: "))
    assert rc == 0 and "lean_flagged 0," in line and "lean_modules 0," in line and "lean_flagged 0.000 s" not in line
