"""The torch (on-device) metrics agree with the numpy ones; the one-pass numpy metrics agree with the
whole-array float64 definitions; capture files written in one pass are real safetensors files."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hipwizard.parity.compare import metrics, metrics_torch
from hipwizard.parity.compare.captures import compare_files
from hipwizard.parity.compare.tolerances import resolve
from hipwizard.parity.requests import RunOptions, Subject
from hipwizard.parity.runs import compare_rerun

torch = pytest.importorskip("torch")


def _definition(ref, cand, tol):
    """The metric definitions, written as whole-array float64 formulas (the oracle)."""
    r, c = np.asarray(ref, np.float64).ravel(), np.asarray(cand, np.float64).ravel()
    d = np.abs(c - r)
    rn, cn = np.linalg.norm(r), np.linalg.norm(c)
    return {"cosine": float(r @ c / (rn * cn)), "rel_l2": float(np.linalg.norm(c - r) / rn), "max_abs": float(d.max()),
            "outside_share": float((d > tol.atol + tol.rtol * np.abs(r)).mean()), "zero": int((d == 0).sum())}


@pytest.mark.parametrize("block", [7, 1 << 18])
def test_one_pass_numpy_metrics_equal_the_definitions(monkeypatch, block):
    monkeypatch.setattr(metrics, "BLOCK", block)  # 7: many blocks, the top-k merge and sums across blocks
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((3, 50)).astype(np.float32)
    cand = ref + (rng.standard_normal(ref.shape) * 0.01).astype(np.float32)
    cand[0, :20] = ref[0, :20]  # exact matches: the "0" histogram bin
    cand[2, 5] = ref[2, 5] + 3.0  # the worst element
    cand[1, 7] = ref[1, 7] - 3.0  # tied with it (same |Δ| up to rounding of the float32 values)
    tol = resolve("bf16")
    m, want = metrics.compute(ref, cand, tol), _definition(ref, cand, tol)
    for key in ("cosine", "rel_l2", "max_abs", "outside_share"):
        assert math.isclose(getattr(m, key), want[key], rel_tol=1e-12), key
    assert m.histogram[0] == ("0", want["zero"]) and sum(n for _l, n in m.histogram) == ref.size
    assert {m.worst[0].index, m.worst[1].index} == {(2, 5), (1, 7)}
    assert [w.abs_err for w in m.worst] == sorted((w.abs_err for w in m.worst), reverse=True)


def test_torch_metrics_equal_numpy_metrics_and_fall_back_on_nan():
    rng = np.random.default_rng(2)
    ref = rng.standard_normal((4, 300)).astype(np.float32)
    cand_t = torch.from_numpy(ref).to(torch.bfloat16)  # a bf16 run of the same numbers
    tol = resolve("bf16")
    a, b = metrics.compute(ref, cand_t.float().numpy(), tol), metrics_torch.compute(ref, cand_t, tol)
    for key in ("cosine", "rel_l2", "max_abs", "outside_share"):
        assert math.isclose(getattr(a, key), getattr(b, key), rel_tol=1e-12), key
    assert a.verdict == b.verdict and a.histogram == b.histogram and a.worst == b.worst
    bad = cand_t.clone()
    bad[0, 0] = float("nan")
    m = metrics_torch.compute(ref, bad, tol)
    assert m.verdict == "nan" and m.nan_count == 1


@pytest.mark.slow
def test_on_device_metrics_match_two_file_compare_on_the_demo_model(demo_assets, tmp_path):
    import json

    from hipwizard.parity.capture.model import capture_model, write_capture
    from hipwizard.parity.compare.captures import compare_captures
    from hipwizard.parity.tensorfile import META_KEY, TensorFile, read_tensor_file

    tensors, meta = capture_model(demo_assets.model_dir, device="cpu", dtype="fp32", seed=5)
    ref = write_capture(tmp_path / "ref.safetensors", tensors, meta).path
    opts = RunOptions(dtype="bf16", device="cpu", perturb={"model.layers.1.mlp": 0.05})
    rerun = compare_rerun(ref, Subject(model=demo_assets.model_dir), opts, keep=tmp_path / "keep")
    files = compare_files(ref, tmp_path / "keep" / "candidate.safetensors")  # the numpy path, same candidate
    # the torch path on the candidate's own tensors (bf16, left "on the device", here the CPU)
    cand, cmeta = capture_model(demo_assets.model_dir, device="cpu", dtype="bf16", on_device=True,
                                inputs_from={"input_ids": tensors["input/input_ids"],
                                             "attention_mask": tensors["input/attention_mask"]},
                                perturb=opts.perturb)
    cand = {k: (v.numpy() if k.startswith("input/") else v) for k, v in cand.items()}
    torch_path = compare_captures(read_tensor_file(ref), TensorFile(tmp_path, cand, {}, {META_KEY: json.dumps(cmeta)}),
                                  metric=metrics_torch.compute)
    assert torch_path.verdict == rerun.verdict == files.verdict == "fail"
    assert torch_path.first_divergent == files.first_divergent == "model.layers.1.mlp"
    assert len(torch_path.layers) == len(files.layers) == 6
    for x, y, z in zip(torch_path.layers, files.layers, rerun.layers, strict=True):
        assert (x.name, x.verdict, x.detail) == (y.name, y.verdict, y.detail) == (z.name, z.verdict, z.detail)
        for key in ("cosine", "rel_l2", "max_abs", "outside_share"):
            assert math.isclose(getattr(x.metrics, key), getattr(y.metrics, key), rel_tol=1e-6), (x.name, key)
        assert x.metrics.histogram == y.metrics.histogram and x.metrics.worst == y.metrics.worst


def test_capture_file_written_in_one_pass_is_read_by_safetensors(tmp_path):
    from safetensors.torch import load_file

    from hipwizard.parity.capture.model import write_capture
    from hipwizard.parity.tensorfile import read_tensor_file

    x = torch.randn(3, 5, dtype=torch.float32)
    tensors = {"input/input_ids": torch.arange(6).reshape(2, 3), "output/a": x.to(torch.bfloat16),
               "output/b": x, "output/s": torch.tensor(2.5, dtype=torch.float64)}
    result = write_capture(tmp_path / "c.safetensors", tensors, {"format": "hipwizard-parity/1"})
    assert result.bytes == (tmp_path / "c.safetensors").stat().st_size and result.modules == 3
    back = load_file(tmp_path / "c.safetensors")
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
    ours = read_tensor_file(tmp_path / "c.safetensors")
    assert np.array_equal(ours.tensors["output/a"], x.to(torch.bfloat16).float().numpy())
    assert list(tmp_path.iterdir()) == [tmp_path / "c.safetensors"]  # no temp file left behind


@pytest.mark.parametrize("block", [7, 1 << 24])
def test_undecoded_bf16_reference_gives_identical_metrics(tmp_path, monkeypatch, block):
    """The re-run route (bf16 bits to the device, widened there; all modules in one transfer) reports
    exactly what the decoded numpy route reports, ties of the worst elements included."""
    import json

    from hipwizard.parity.capture.model import write_capture
    from hipwizard.parity.compare.captures import compare_captures
    from hipwizard.parity.tensorfile import (
        META_KEY,
        BF16Bits,
        TensorFile,
        read_tensor_file,
    )

    monkeypatch.setattr(metrics_torch, "BLOCK", block)  # 7: many blocks, ties across and within blocks
    gen = torch.Generator().manual_seed(3)
    outs = {f"m{i}": torch.randn(4, 37, generator=gen).to(torch.bfloat16) for i in range(3)}
    outs["m2"] = torch.zeros(4, 37, dtype=torch.bfloat16)  # a zero reference
    cand = {n: t.float() for n, t in outs.items()}
    cand["m0"] = cand["m0"] + 0.25  # every |Δ| tied: the worst are the five lowest positions
    cand["m1"][1, 3] += 5.0
    cand["m1"][3, 30] -= 5.0  # tied with it, in a later block
    ids = torch.arange(8).reshape(2, 4)
    meta = {"format": "hipwizard-parity/1", "kind": "model", "dtype": "bf16", "device": "cpu",
            "modules": [{"name": n, "order": i, "shape": [4, 37]} for i, n in enumerate(outs)]}
    path = write_capture(tmp_path / "ref.safetensors", {"input/input_ids": ids, **{f"output/{n}": t for n, t in outs.items()}}, meta)
    raw, decoded = read_tensor_file(path.path, decode_bf16=False), read_tensor_file(path.path)
    assert isinstance(raw.tensors["output/m0"], BF16Bits) and raw.stored_dtypes["output/m0"] == "BF16"
    assert np.array_equal(np.asarray(raw.tensors["output/m1"]), decoded.tensors["output/m1"])
    cand_tf = TensorFile(tmp_path, {"input/input_ids": ids.numpy(), **{f"output/{n}": t for n, t in cand.items()}},
                         {}, {META_KEY: json.dumps(meta)})
    on_device = compare_captures(raw, cand_tf, metric=metrics_torch.compute)
    numpy_path = compare_captures(decoded, TensorFile(tmp_path, {k: np.asarray(v) for k, v in cand_tf.tensors.items()},
                                                      {}, cand_tf.metadata))
    assert [x.verdict for x in numpy_path.layers] == ["fail", "fail", "pass"]
    for x, y in zip(on_device.layers, numpy_path.layers, strict=True):
        assert (x.name, x.verdict, x.detail) == (y.name, y.verdict, y.detail)
        for key in ("cosine", "rel_l2", "max_abs", "outside_share"):
            assert math.isclose(getattr(x.metrics, key), getattr(y.metrics, key), rel_tol=1e-12, abs_tol=1e-300), key
        assert x.metrics.histogram == y.metrics.histogram and x.metrics.worst == y.metrics.worst
    assert [w.index for w in on_device.layers[0].metrics.worst] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]
    assert {w.index for w in on_device.layers[1].metrics.worst[:2]} == {(1, 3), (3, 30)}


@pytest.mark.parametrize("n", [3000, 4096, 1024 * 9])
def test_stacked_metrics_pick_the_same_worst_elements_as_numpy_across_chunks(n):
    """Same-size pairs are reduced as one stack and their worst elements picked by chunk (1,024 values):
    ties at the k-th value spread over several chunks, a row padded to whole chunks, a row whose worst
    all sit in one chunk, a row of all-equal errors — each reports what the numpy path reports."""
    gen = torch.Generator().manual_seed(11)
    refs = [torch.randn(n, generator=gen) for _ in range(4)]
    cands = [r + torch.randn(n, generator=gen) * 1e-3 for r in refs]
    for pos, sign in ((n - 1, 1), (17, 1), (2100, 1), (1500, 1), (900, -1), (5, 1)):
        refs[0][pos], cands[0][pos] = 0.25, 0.25 + sign * 2.0  # six exact ties at the top, in different chunks
        # (the first in the last chunk, padded when n is not whole chunks): only the five lowest positions count
    cands[1][10:16] = refs[1][10:16] + 3.0  # all worst in one chunk
    cands[2] = refs[2] + 0.5  # every |Δ| tied (up to float32 rounding of the sums): lowest positions win
    cands[3] = refs[3].clone()  # exact: zero error everywhere
    tol = resolve("fp32")
    pairs = [(r.numpy(), c) for r, c in zip(refs, cands, strict=True)]
    got = metrics_torch.compute_many(pairs, tol)
    for (r, c), m in zip(pairs, got, strict=True):
        want = metrics.compute(r, c.numpy(), tol)
        assert m.worst == want.worst and m.histogram == want.histogram
        for key in ("cosine", "rel_l2", "max_abs", "outside_share"):
            assert math.isclose(getattr(m, key), getattr(want, key), rel_tol=1e-12, abs_tol=1e-300), key
    assert [w.index for w in got[0].worst] == [(5,), (17,), (900,), (1500,), (2100,)]


def test_upload_moves_a_capture_in_one_copy_and_keeps_every_value(tmp_path):
    from hipwizard.parity.capture.model import write_capture
    from hipwizard.parity.tensorfile import read_tensor_file

    gen = torch.Generator().manual_seed(4)
    tensors = {"input/input_ids": torch.arange(6).reshape(2, 3),
               "output/a": torch.randn(3, 5, generator=gen).to(torch.bfloat16),  # 30 bytes: what follows is unaligned
               "output/b": torch.randn(7, generator=gen), "grad/out/b": torch.randn(2, 2, generator=gen).double()}
    path = write_capture(tmp_path / "c.safetensors", tensors, {"format": "hipwizard-parity/1"}).path
    tf = read_tensor_file(path, decode_bf16=False)
    assert metrics_torch.upload(tf, "cpu") is tf  # nothing to gain on the host
    moved = metrics_torch.upload(tf, "meta")  # a device without data: shapes and dtypes, one transfer
    for k in ("output/a", "output/b", "grad/out/b"):
        assert moved.tensors[k].device.type == "meta" and moved.tensors[k].dtype == tensors[k].dtype
        assert tuple(moved.tensors[k].shape) == tuple(tensors[k].shape)
    assert moved.tensors["input/input_ids"] is tf.tensors["input/input_ids"]
