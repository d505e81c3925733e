"""Compact captures: module outputs stored as count sketches too. A forward bug is still found at its layer,
a compact capture is never compared with a full one, and the CLI's --compact sketches what is bigger than a
sketch and says what it cannot show."""

from __future__ import annotations

import json

import pytest

from hipwizard.cli import main
from hipwizard.errors import UserError
from hipwizard.parity.capture.model import capture_model, write_capture
from hipwizard.parity.compare.captures import compare_files
from hipwizard.parity.compare.result import Comparison
from hipwizard.parity.tensorfile import read_meta, read_tensor_file

pytestmark = pytest.mark.slow
OPTS = dict(device="cpu", seed=0, batch=2, seq=16)


def _capture(demo_assets, path, **kw):
    tensors, meta = capture_model(demo_assets.model_dir, **OPTS, **kw)
    return write_capture(path, tensors, meta).path


def test_forward_bug_is_found_at_its_layer_with_every_output_sketched(demo_assets, tmp_path):
    ref = _capture(demo_assets, tmp_path / "ref.safetensors", dtype="fp64", compact=256)
    meta = read_meta(ref)
    assert meta["output_sketch"] == 256 and meta["modules"] and all(m["form"] == "count-sketch 256" for m in meta["modules"])
    outputs = [t for k, t in read_tensor_file(ref).tensors.items() if k.startswith("output/")]
    assert outputs and all(t.shape == (256,) for t in outputs)
    good = _capture(demo_assets, tmp_path / "good.safetensors", dtype="bf16", compact=256)
    bad = _capture(demo_assets, tmp_path / "bad.safetensors", dtype="bf16", compact=256,
                   perturb={"model.layers.1.mlp": 0.05})
    ok, broken = compare_files(ref, good), compare_files(ref, bad)
    assert ok.own_verdict == "pass" and broken.own_verdict == "fail"
    assert broken.first_divergent == "model.layers.1.mlp"
    row = {layer.name: layer for layer in broken.layers}["model.layers.1.mlp"]
    assert row.metrics.sketch == "count-sketch 256" and row.metrics.max_abs is None and row.metrics.rel_l2 > 0.01
    assert row.shape == [2, 16, 64]  # the module output's own shape, not the sketch's
    full = _capture(demo_assets, tmp_path / "full.safetensors", dtype="bf16")
    with pytest.raises(UserError, match="module outputs differ in form: count sketches of 256 values .reference. ≠ "
                                        "every element .candidate.; capture both with .or both without. --compact"):
        compare_files(ref, full)


def test_cli_compact_capture_is_rerun_compact_and_shows_what_it_cannot(demo_assets, tmp_path, capsys):
    ref = tmp_path / "ref.safetensors"
    assert main(["parity", "capture", "--model", str(demo_assets.model_dir), "--device", "cpu", "--dtype", "fp64",
                 "--seq", "16", "--compact", "--out", str(ref)]) == 0
    capsys.readouterr()
    head = {m["name"]: m for m in read_meta(ref)["modules"]}["lm_head"]
    assert head["form"] == "count-sketch 8192" and head["full_shape"] == [2, 16, 512]  # 16,384 logits: sketched
    assert main(["parity", "compare", str(ref), "--model", str(demo_assets.model_dir), "--device", "cpu",
                 "--dtype", "bf16", "--no-save", "--json"]) == 0
    comp = Comparison.from_dict(json.loads(capsys.readouterr().out))
    rows = {layer.name: layer for layer in comp.layers}
    assert rows["lm_head"].metrics.sketch == "count-sketch 8192" and rows["lm_head"].metrics.outside_share is None
    assert rows["model.layers.0.mlp"].metrics.sketch is None  # 2 × 16 × 64 values: smaller than a sketch, kept whole
