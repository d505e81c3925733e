from __future__ import annotations

import numpy as np
import pytest

from hipwizard.errors import UserError
from hipwizard.parity.compare.captures import compare_files
from tests.parity.parity_captures import layer_outputs


def test_same_outputs_pass_and_report_both_sides(capture_factory):
    out = layer_outputs()
    comp = compare_files(capture_factory("a.safetensors", out), capture_factory("b.safetensors", out))
    assert comp.verdict == "pass" and comp.counts == (4, 4)
    assert comp.reference["file"] == "a.safetensors" and comp.candidate["file"] == "b.safetensors"
    assert comp.tolerance["name"] == "fp32"
    assert [layer.label for layer in comp.layers] == ["✔ pass"] * 4


def test_tolerance_follows_less_precise_side_and_can_be_forced(capture_factory):
    out = layer_outputs()
    a = capture_factory("a.safetensors", out, dtype="fp64")
    b = capture_factory("b.safetensors", out, dtype="bf16")
    assert compare_files(a, b).tolerance["name"] == "bf16"
    assert compare_files(a, b, tolerance="fp32").tolerance["name"] == "fp32"


def test_different_model_is_refused(capture_factory):
    out = layer_outputs()
    a = capture_factory("a.safetensors", out)
    b = capture_factory("b.safetensors", out, model={"name": "m", "config_hash": "c0", "weights_hash": "OTHER"})
    with pytest.raises(UserError, match="different models: weights hash"):
        compare_files(a, b)
    c = capture_factory("c.safetensors", out, model={"name": "m", "config_hash": "c1", "weights_hash": "w0"})
    with pytest.raises(UserError, match="config hash c0"):
        compare_files(a, c)


def test_different_inputs_and_kind_are_refused(capture_factory):
    out = layer_outputs()
    a = capture_factory("a.safetensors", out)
    b = capture_factory("b.safetensors", out, inputs={"input_ids": np.zeros((2, 4), dtype=np.int64)})
    with pytest.raises(UserError, match="differs between the captures"):
        compare_files(a, b)
    h = capture_factory("h.safetensors", out, kind="harness")
    with pytest.raises(UserError, match="model capture with a harness"):
        compare_files(a, h)


def test_missing_module_and_shape_mismatch_make_it_invalid(capture_factory):
    out = layer_outputs()
    a = capture_factory("a.safetensors", out)
    fewer = {k: v for k, v in out.items() if k != "model.layers.2.mlp"}
    comp = compare_files(a, capture_factory("b.safetensors", fewer))
    assert comp.verdict == "invalid"
    assert "model.layers.2.mlp is missing from the candidate" in comp.problems[0]
    assert [layer.verdict for layer in comp.layers] == ["pass", "pass", "missing", "pass"]
    reshaped = dict(out, **{"model.layers.1.mlp": out["model.layers.1.mlp"].reshape(4, 2, 16)})
    comp = compare_files(a, capture_factory("c.safetensors", reshaped))
    assert comp.verdict == "invalid" and comp.layers[1].label == "✖ shape"
    assert "shape [2, 4, 16] (reference) ≠ [4, 2, 16]" in comp.problems[0]


def test_nan_in_candidate_fails_as_nan(capture_factory):
    out = layer_outputs()
    bad = {k: v.copy() for k, v in out.items()}
    bad["model.layers.3.mlp"][0, 0, 0] = np.nan
    comp = compare_files(capture_factory("a.safetensors", out), capture_factory("b.safetensors", bad))
    assert comp.verdict == "fail"
    assert comp.layers[3].label == "✖ NaN" and comp.first_divergent == "model.layers.3.mlp"
    assert "NaN" in comp.headline() or comp.first_divergent in comp.headline()


def test_extra_candidate_modules_are_shown_not_compared(capture_factory):
    out = layer_outputs(n=2)
    more = dict(out, extra=np.ones(3, dtype=np.float32))
    comp = compare_files(capture_factory("a.safetensors", out), capture_factory("b.safetensors", more))
    assert comp.verdict == "pass" and comp.layers[-1].label == "⚠ extra"
