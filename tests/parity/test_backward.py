"""Gradient parity on the demo's tiny Llama (real torch + transformers on this CPU, no mocks): a backward-only
bug is caught at its layer, a forward bug still at its layer, a correct model passes both directions, and
bad input is refused in one line."""

from __future__ import annotations

import json

import pytest

from hipwizard.cli import main
from hipwizard.errors import UserError
from hipwizard.parity.capture.backward import BackwardSpec, scalar_loss
from hipwizard.parity.capture.model import capture_model, write_capture
from hipwizard.parity.compare.captures import compare_files
from hipwizard.parity.compare.result import Comparison

pytestmark = pytest.mark.slow
OPTS = dict(device="cpu", seed=0, batch=2, seq=16)


@pytest.fixture(scope="module")
def captures(demo_assets, tmp_path_factory):
    """fp64 (truth) and bf16 / fp32 captures with gradients, one forward-only capture, one of another loss."""
    folder = tmp_path_factory.mktemp("bwd")
    paths = {}
    for name, kw in {"fp64": dict(dtype="fp64", backward=BackwardSpec()),
                     "fp32": dict(dtype="fp32", backward=BackwardSpec()),
                     "bf16": dict(dtype="bf16", backward=BackwardSpec()),
                     "fwd": dict(dtype="fp32"),
                     "full": dict(dtype="fp32", backward=BackwardSpec(weights="lora-full", count_size=0)),
                     "proj": dict(dtype="fp32", backward=BackwardSpec(loss="projection"))}.items():
        tensors, meta = capture_model(demo_assets.model_dir, **OPTS, **kw)
        paths[name] = write_capture(folder / f"{name}.safetensors", tensors, meta).path
    return paths


def _rerun(capsys, *args) -> tuple[int, Comparison]:
    rc = main(["parity", "compare", *map(str, args), "--device", "cpu", "--no-save", "--json"])
    return rc, Comparison.from_dict(json.loads(capsys.readouterr().out))


def test_capture_holds_gradients_in_backward_order(captures):
    from hipwizard.parity.tensorfile import read_meta, read_tensor_file

    meta = read_meta(captures["bf16"])
    rows = [g["name"] for g in meta["backward"]["grads"]]
    assert rows[0] == "∂out lm_head" and rows[-1] == "∂in model.layers.0.self_attn"
    # the LoRA targets' weights of each attention module, none of the MLP's
    assert "∂W model.layers.1.self_attn.q_proj.weight" in rows and "∂W model.layers.1.self_attn.v_proj.weight" in rows
    assert not any(r.startswith("∂W model.layers.1.mlp") for r in rows)
    tf = read_tensor_file(captures["bf16"])
    assert meta["backward"]["grads"] and all(g["key"] in tf.tensors for g in meta["backward"]["grads"])
    assert meta["backward"]["loss"] == "lm" and meta["backward"]["loss_value"] > 0


def test_correct_model_passes_forward_and_backward_with_triangle(captures, demo_assets, capsys):
    for dtype in ("bf16", "fp32"):
        rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", dtype,
                          "--reference-run", captures[dtype])
        assert rc == 0 and comp.verdict == "pass", comp.headline()
        assert comp.backward is not None and comp.backward.own_verdict == "pass"
        assert comp.triangle_k == 2.0 and comp.backward.layers and all(layer.triangle is not None for layer in comp.backward.layers)


def test_backward_only_bug_passes_forward_and_is_caught_at_its_layer(captures, demo_assets, capsys):
    rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", "bf16",
                      "--reference-run", captures["bf16"], "--perturb-grad", "model.layers.1.mlp=0.05")
    assert rc == 1
    assert comp.own_verdict == "pass" and comp.first_divergent is None  # forward: bit-identical
    assert comp.backward.first_divergent_module == "model.layers.1.mlp"
    by_name = {layer.name: layer for layer in comp.backward.layers}
    assert by_name["∂out model.layers.1.mlp"].deciding_pass  # what it received is right ...
    assert not by_name["∂in model.layers.1.mlp"].deciding_pass  # ... what it handed on is not


def test_forward_bug_still_caught_at_its_layer(captures, demo_assets, capsys):
    rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", "fp32",
                      "--reference-run", captures["fp32"], "--perturb", "model.layers.0.mlp=0.05")
    assert rc == 1 and comp.first_divergent == "model.layers.0.mlp"
    assert comp.backward.own_verdict == "fail"  # the gradients inherit a wrong forward


def test_triangle_fails_what_the_fixed_table_passes(captures):
    # the same bf16 capture as port and as reference run: ratio 1 everywhere; k below 1 fails every row that
    # the fixed bf16 table passes, and the triangle decides the verdict
    comp = compare_files(captures["fp64"], captures["bf16"], ref_run=captures["bf16"], k=2.0)
    assert comp.triangle_verdict == "pass" and {round(x.triangle.ratio, 6) for x in comp.layers} == {1.0}
    strict = compare_files(captures["fp64"], captures["bf16"], ref_run=captures["bf16"], k=0.5)
    assert strict.fixed_verdict == "pass" and strict.triangle_verdict == "fail" and strict.verdict == "fail"


def test_bad_input_one_line_exit_2(captures, demo_assets, capsys):
    cases = [
        ([captures["fwd"], captures["bf16"], "--backward"], "holds no gradients"),
        ([captures["fp32"], captures["proj"]], "differ in loss: lm (reference) ≠ projection"),
        ([captures["fp64"], captures["bf16"], "--reference-run", captures["fp32"]], "is fp32 but the candidate is bf16"),
        ([captures["bf16"], captures["bf16"], "--reference-run", captures["bf16"]], "higher precision"),
        ([captures["fwd"], "--model", demo_assets.model_dir, "--backward"], "holds no gradients"),
    ]
    for args, message in cases:
        rc = main(["parity", "compare", *map(str, args), "--no-save", "--device", "cpu"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and message in err[0], (args, err)


def test_other_seed_is_refused(captures, demo_assets, tmp_path):
    tensors, meta = capture_model(demo_assets.model_dir, **dict(OPTS, seed=1), dtype="bf16", backward=BackwardSpec())
    other = write_capture(tmp_path / "seed1.safetensors", tensors, meta).path
    with pytest.raises(UserError, match="differs between the captures"):
        compare_files(captures["fp64"], other, ref_run=captures["bf16"])


def test_projection_loss_is_seeded_and_machine_independent():
    import torch

    logits = torch.linspace(-1, 1, 2 * 3 * 5).reshape(2, 3, 5)
    ids = torch.zeros(2, 3, dtype=torch.int64)
    a = scalar_loss(logits, ids, BackwardSpec(loss="projection", loss_seed=3))
    b = scalar_loss(logits.clone(), ids, BackwardSpec(loss="projection", loss_seed=3))
    c = scalar_loss(logits, ids, BackwardSpec(loss="projection", loss_seed=4))
    assert float(a) == float(b) and float(a) != float(c)
    with pytest.raises(UserError, match="unknown --loss"):
        BackwardSpec(loss="mse")


def test_attention_matrix_rows_per_backend(captures, demo_assets, capsys):
    rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", "bf16",
                      "--reference-run", captures["bf16"], "--attn", "eager,sdpa,no-such-backend")
    rows = {row.attn: row for row in comp.matrix}
    assert list(rows) == ["eager", "sdpa", "no-such-backend"]
    assert rows["eager"].comparison.backward is not None and rows["sdpa"].comparison.verdict == "pass"
    assert rows["no-such-backend"].comparison is None and rows["no-such-backend"].error
    assert rc == 0 and "no-such-backend not available" in comp.headline()


def test_weight_gradients_are_stored_as_lora_sketches(captures):
    from hipwizard.parity.capture import sketch
    from hipwizard.parity.tensorfile import read_meta, read_tensor_file

    meta = read_meta(captures["fp32"])
    assert meta["backward"]["sketch_rank"] == sketch.DEFAULT_RANK
    rows = {g["name"]: g for g in meta["backward"]["grads"]}
    q = rows["∂W model.layers.1.self_attn.q_proj.weight"]
    out, inp = q["full_shape"]
    assert q["form"] == "sketch r16" and q["shape"] == [sketch.sketch_size((out, inp), 16)] and q["shape"][0] < out * inp
    full = read_tensor_file(captures["full"])
    assert list(full.tensors[q["key"]].shape) == [out, inp]  # lora-full keeps the whole gradient
    # the stored sketch is the sketch of the full gradient (same seeded projections on every run)
    import torch

    whole = torch.from_numpy(full.tensors[q["key"]].copy())
    again = sketch.sketch(whole).numpy()
    stored = read_tensor_file(captures["fp32"]).tensors[q["key"]]
    assert abs(again - stored).max() <= 1e-6 * abs(stored).max()


def test_wrong_weight_gradient_alone_is_caught_by_the_sketch(captures, demo_assets, capsys):
    target = "model.layers.1.self_attn.q_proj.weight"
    rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", "bf16",
                      "--reference-run", captures["bf16"], "--perturb-grad", f"{target}=0.05")
    assert rc == 1 and comp.own_verdict == "pass"  # the forward is untouched
    failing = [layer.name for layer in comp.backward.layers if not layer.deciding_pass]
    assert failing == [f"∂W {target}"], failing  # every ∂out/∂in row still passes: only the weight gradient is wrong
    assert comp.backward.first_divergent == f"∂W {target}"
    row = {layer.name: layer for layer in comp.backward.layers}[f"∂W {target}"]
    assert row.triangle.ratio > 2 and row.metrics.rel_l2 > 0.02


def test_sketch_and_full_weight_gradients_are_not_compared(captures):
    with pytest.raises(UserError, match="differ in form: full .reference. ≠ rank-16 sketch"):
        compare_files(captures["full"], captures["fp32"])


def test_capture_from_before_the_sketch_still_compares(captures, demo_assets, tmp_path, capsys):
    """A capture written before sketches (no sketch_rank, full ∂W) is re-run with full ∂W and compared."""
    from hipwizard.parity.tensorfile import read_meta, read_tensor_file, write_tensor_file

    tf = read_tensor_file(captures["full"])
    meta = read_meta(tf)
    meta["backward"].pop("sketch_rank")
    meta["backward"].pop("count_size")
    meta["backward"]["weights"] = "lora"
    tags = {"F32": "F32", "I64": "I64"}
    old = tmp_path / "old.safetensors"
    write_tensor_file(old, {k: (tags[tf.stored_dtypes[k]], list(v.shape), v) for k, v in tf.tensors.items()},
                      {"hipwizard": json.dumps(meta)})
    rc, comp = _rerun(capsys, old, "--model", demo_assets.model_dir)
    assert rc == 0 and comp.backward is not None and comp.backward.own_verdict == "pass"


def test_activation_gradients_are_count_sketched_and_judged_by_their_estimates(captures, demo_assets, capsys):
    """The demo's lm_head ∂out (2 × 16 × 512 logits) is bigger than a sketch: stored as 8,192 float64 values,
    compared by cosine and rel L2 only, its per-element numbers shown as not kept; smaller rows stay whole."""
    from hipwizard.parity.tensorfile import read_meta, read_tensor_file

    meta = read_meta(captures["bf16"])
    rows = {g["name"]: g for g in meta["backward"]["grads"]}
    head = rows["∂out lm_head"]
    assert head["form"] == "count-sketch 8192" and head["full_shape"] == [2, 16, 512]
    assert read_tensor_file(captures["bf16"]).tensors[head["key"]].shape == (8192,)
    assert "form" not in rows["∂out model.layers.1.mlp"]  # 2 × 16 × 64 = 2,048 values: kept whole
    rc, comp = _rerun(capsys, captures["fp64"], "--model", demo_assets.model_dir, "--dtype", "bf16",
                      "--reference-run", captures["bf16"])
    by_name = {layer.name: layer for layer in comp.backward.layers}
    m = by_name["∂out lm_head"].metrics
    assert m.sketch == "count-sketch 8192" and m.max_abs is None and m.outside_share is None and not m.worst
    assert 0 < m.rel_l2 < 0.05 and by_name["∂out lm_head"].triangle is not None
    assert by_name["∂out model.layers.1.mlp"].metrics.sketch is None
    main(["parity", "compare", str(captures["fp64"]), "--model", str(demo_assets.model_dir), "--dtype", "bf16",
          "--device", "cpu", "--no-save"])
    out = capsys.readouterr().out
    assert "Rows stored as count-sketch 8192" in out and "--grad-sketch 0 keeps every element of ∂out/∂in" in out
    from hipwizard.tui.parity.views import details

    weight = next(layer for layer in comp.backward.layers if (layer.metrics and layer.metrics.sketch or "").startswith("sketch r"))
    assert "--grad-weights lora-full" in details(weight, comp.backward)  # a ∂W sketch: not the ∂out/∂in option
    assert "--grad-sketch 0" in details(by_name["∂out lm_head"], comp.backward)


def test_backward_bug_is_caught_at_its_layer_when_every_row_is_sketched(demo_assets, tmp_path, capsys):
    """Sketches of 256 values (smaller than every activation gradient of the demo): the wrong backward of
    layer 1's MLP is still found there, the correct rows still pass."""
    paths = {}
    for dtype in ("fp64", "bf16"):
        tensors, meta = capture_model(demo_assets.model_dir, **OPTS, dtype=dtype, backward=BackwardSpec(count_size=256))
        paths[dtype] = write_capture(tmp_path / f"{dtype}.safetensors", tensors, meta).path
    assert meta["backward"]["grads"] and all(g.get("form") for g in meta["backward"]["grads"] if g["kind"] != "w")
    base = (paths["fp64"], "--model", demo_assets.model_dir, "--dtype", "bf16", "--reference-run", paths["bf16"])
    rc, comp = _rerun(capsys, *base)
    assert rc == 0 and comp.backward.own_verdict == "pass"
    rc, comp = _rerun(capsys, *base, "--perturb-grad", "model.layers.1.mlp=0.05")
    assert rc == 1 and comp.own_verdict == "pass"
    assert comp.backward.first_divergent == "∂in model.layers.1.mlp"


def test_sketched_and_whole_activation_gradients_are_not_compared(captures, demo_assets, tmp_path, capsys):
    tensors, meta = capture_model(demo_assets.model_dir, **OPTS, dtype="fp32", backward=BackwardSpec(count_size=0))
    whole = write_capture(tmp_path / "whole.safetensors", tensors, meta).path
    with pytest.raises(UserError, match="∂out/∂in differ in form: every element .reference. ≠ count sketches of 8192"):
        compare_files(whole, captures["fp32"])
    assert main(["parity", "capture", "--model", str(demo_assets.model_dir), "--backward", "--grad-sketch", "-1",
                 "--out", "x.safetensors"]) == 2
    assert "--grad-sketch -1" in capsys.readouterr().err
