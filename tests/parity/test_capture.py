"""Real captures of the demo's tiny Llama on this CPU (torch + transformers, no mocks)."""

from __future__ import annotations

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.capture.model import capture_model, write_capture
from hipwizard.parity.compare.captures import compare_files
from hipwizard.parity.requests import RunOptions, Subject
from hipwizard.parity.runs import compare_rerun, compare_same_machine

pytestmark = pytest.mark.slow


def _capture(model_dir, path, **kw):
    tensors, meta = capture_model(model_dir, device="cpu", **kw)
    return write_capture(path, tensors, meta)


def test_default_modules_metadata_and_same_machine_pass(demo_assets, tmp_path):
    a = _capture(demo_assets.model_dir, tmp_path / "a.safetensors", dtype="fp32", seed=3)
    b = _capture(demo_assets.model_dir, tmp_path / "b.safetensors", dtype="fp32", seed=3)
    names = [m["name"] for m in a.meta["modules"]]
    assert names == ["model.layers.0.self_attn", "model.layers.0.mlp", "model.layers.1.self_attn",
                     "model.layers.1.mlp", "model.norm", "lm_head"]
    meta = a.meta
    assert meta["device"] == "cpu" and meta["torch"] and meta["dtype"] == "fp32"
    assert len(meta["model"]["config_hash"]) == 16 and len(meta["model"]["weights_hash"]) == 16
    assert meta["modules"][-1]["shape"] == [2, 32, 512]
    assert a.bytes < 1_000_000 and a.timings["write_s"] >= 0
    comp = compare_files(a.path, b.path)
    assert comp.verdict == "pass" and comp.counts == (6, 6)
    assert comp.layers and all(layer.metrics.max_abs == 0.0 for layer in comp.layers)  # same machine, same build: bit-identical


def test_perturbed_module_is_first_divergent_not_the_largest_error(demo_assets, tmp_path):
    # A hook adding noise to layer 0's MLP output, as a broken kernel would.
    comp = compare_same_machine(
        Subject(model=demo_assets.model_dir), RunOptions(dtype="fp32", device="cpu", perturb={"model.layers.0.mlp": 0.05}),
    )
    assert comp.verdict == "fail"
    assert comp.first_divergent == "model.layers.0.mlp"
    by_name = {layer.name: layer for layer in comp.layers}
    assert by_name["model.layers.0.self_attn"].passed
    worst = max(comp.layers, key=lambda layer: layer.metrics.max_abs)
    assert worst.name != comp.first_divergent  # the biggest error is further down, not where it starts
    assert comp.candidate["perturb"] == {"model.layers.0.mlp": 0.05}


def test_bf16_passes_under_bf16_tolerance_and_fails_under_fp32(demo_assets, tmp_path):
    comp = compare_same_machine(Subject(model=demo_assets.model_dir), RunOptions(dtype="bf16", device="cpu"),
                                keep=tmp_path / "keep")
    assert comp.tolerance["name"] == "bf16" and comp.verdict == "pass", [layer.detail for layer in comp.layers]
    ref, cand = tmp_path / "keep" / "reference.safetensors", tmp_path / "keep" / "candidate.safetensors"
    strict = compare_files(ref, cand, tolerance="fp32")
    assert strict.verdict == "fail" and strict.counts[0] == 0
    assert strict.layers and all("rel L2" in layer.detail for layer in strict.layers)
    assert comp.reference["dtype"] == "fp64" and comp.candidate["dtype"] == "bf16"
    assert comp.timings["candidate_bytes"] < comp.timings["reference_bytes"]


def test_rerun_uses_reference_inputs_and_refuses_another_model(demo_assets, tmp_path):
    ref = _capture(demo_assets.model_dir, tmp_path / "ref.safetensors", dtype="fp32", seed=7, batch=1, seq=8,
                   layers=["model.layers.*.mlp"])
    comp = compare_rerun(ref.path, Subject(model=demo_assets.model_dir), RunOptions(dtype="bf16", device="cpu"))
    assert comp.verdict == "pass" and [layer.name for layer in comp.layers] == ["model.layers.0.mlp", "model.layers.1.mlp"]
    import json
    import shutil

    other = tmp_path / "other"
    shutil.copytree(demo_assets.model_dir, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["rms_norm_eps"] = 1e-6
    (other / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UserError, match="not the model the reference was captured from: config hash"):
        compare_rerun(ref.path, Subject(model=other), RunOptions(device="cpu"))


def test_bad_layer_pattern_and_perturb_target(demo_assets):
    with pytest.raises(UserError, match="matches no module"):
        capture_model(demo_assets.model_dir, device="cpu", layers=["model.decoder.*"])
    with pytest.raises(UserError, match="not a module"):
        capture_model(demo_assets.model_dir, device="cpu", perturb={"nope": 0.1})
