"""A capture written while the model runs (``capture_stream``) holds exactly what the write-at-the-end path
holds, is atomic (nothing at the path, no temporary file, after a failure) and survives a module called twice
and a header that outgrows its reserve."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hipwizard.parity.tensorfile import TensorStream, read_meta, read_tensor_file

torch = pytest.importorskip("torch")


def test_stream_whose_header_outgrows_the_reserve_is_still_a_safetensors_file(tmp_path):
    from safetensors.numpy import load_file

    path = tmp_path / "c.safetensors"
    arrays = {f"output/m{i}": np.arange(i + 3, dtype=np.float32) * i for i in range(40)}
    stream = TensorStream(path, reserve=64)  # far too small for 40 entries: the data is moved behind the header
    for name, arr in arrays.items():
        stream.add(name, "F32", list(arr.shape), arr)
    size = stream.finish({"hipwizard": json.dumps({"format": "x"})})
    assert size == path.stat().st_size and list(tmp_path.iterdir()) == [path]
    back = load_file(path)
    assert arrays.items() and all(np.array_equal(back[n], a) for n, a in arrays.items())
    with TensorStream(tmp_path / "d.safetensors") as other, pytest.raises(ValueError, match="already in the stream"):
        other.add("a", "F32", [1], np.zeros(1, np.float32))
        other.add("a", "F32", [1], np.zeros(1, np.float32))
    other.abort()
    assert list(tmp_path.iterdir()) == [path]


def test_failed_stream_leaves_nothing_behind(tmp_path):
    path = tmp_path / "c.safetensors"
    path.write_bytes(b"an earlier capture")
    with pytest.raises(RuntimeError), TensorStream(path) as stream:
        stream.add("a", "F32", [2], np.ones(2, np.float32))
        raise RuntimeError("the forward pass failed")
    assert path.read_bytes() == b"an earlier capture" and list(tmp_path.iterdir()) == [path]


def _capture(demo_assets, tmp_path, name, backward=None, sink=True, layers=None):
    from hipwizard.parity.capture.model import capture_model, write_capture
    from hipwizard.parity.capture.stream import CaptureSink

    out = tmp_path / f"{name}.safetensors"
    kw = dict(device="cpu", dtype="bf16", seed=3, batch=2, seq=8, backward=backward, layers=layers)
    if not sink:
        tensors, meta = capture_model(demo_assets.model_dir, **kw)
        return write_capture(out, tensors, meta).path
    with CaptureSink(out) as s:
        tensors, meta = capture_model(demo_assets.model_dir, **kw, sink=s)
        s.finish(tensors, meta)
    return out


@pytest.mark.parametrize("backward", [False, True])
def test_streamed_capture_holds_what_the_batch_write_holds(demo_assets, tmp_path, backward):
    from hipwizard.parity.capture.backward import BackwardSpec

    spec = BackwardSpec(count_size=256) if backward else None
    streamed = read_tensor_file(_capture(demo_assets, tmp_path, "s", spec))
    batch = read_tensor_file(_capture(demo_assets, tmp_path, "b", spec, sink=False))
    assert sorted(streamed.tensors) == sorted(batch.tensors)
    assert any(k.startswith("grad/") for k in streamed.tensors) == backward
    for k, arr in batch.tensors.items():
        assert streamed.stored_dtypes[k] == batch.stored_dtypes[k] and np.array_equal(np.asarray(streamed.tensors[k]), np.asarray(arr)), k
    assert read_meta(streamed)["modules"] == read_meta(batch)["modules"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.safetensors", "s.safetensors"]


def test_name_put_twice_keeps_its_last_tensor(tmp_path):
    """A module called twice in a pass (a shared module): the stream cannot replace bytes it wrote, so the
    file is written whole at the end, with the last output, as the write-at-the-end path keeps it."""
    from hipwizard.parity.capture.stream import CaptureSink

    out = tmp_path / "c.safetensors"
    with CaptureSink(out) as sink:
        sink.put("output/a", torch.zeros(3))
        sink.put("output/b", torch.ones(2))
        last = sink.put("output/a", torch.full((3,), 7.0))
        size = sink.finish({"output/a": last, "output/b": torch.ones(2), "input/input_ids": torch.arange(4)},
                           {"format": "hipwizard-parity/1"})
    tf = read_tensor_file(out)
    assert size == out.stat().st_size and list(tmp_path.iterdir()) == [out]
    assert tf.tensors["output/a"].tolist() == [7.0] * 3 and tf.tensors["input/input_ids"].tolist() == [0, 1, 2, 3]


def test_capture_that_fails_mid_pass_leaves_no_file(demo_assets, tmp_path):
    from hipwizard.errors import UserError
    from hipwizard.parity.requests import RunOptions, Subject
    from hipwizard.parity.runs import capture_subject

    out = tmp_path / "c.safetensors"
    with pytest.raises(UserError, match="--perturb names"):
        capture_subject(Subject(model=demo_assets.model_dir), RunOptions(device="cpu", perturb={"no.such": 0.1}), out)
    assert list(tmp_path.iterdir()) == []
