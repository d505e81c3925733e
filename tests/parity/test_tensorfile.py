from __future__ import annotations

import numpy as np
import pytest

from hipwizard.errors import UserError
from hipwizard.parity.tensorfile import read_meta, read_tensor_file
from tests.parity.parity_captures import layer_outputs, write_capture


def test_bf16_is_read_exactly_without_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    x = torch.randn(3, 5, dtype=torch.float32).to(torch.bfloat16)
    save_file({"x": x}, str(tmp_path / "b.safetensors"))
    tf = read_tensor_file(tmp_path / "b.safetensors")
    assert tf.stored_dtypes["x"] == "BF16"
    assert np.array_equal(tf.tensors["x"], x.float().numpy())


def test_truncated_file_is_one_clear_error(tmp_path):
    path = write_capture(tmp_path / "a.safetensors", layer_outputs())
    data = path.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) - 100])
    with pytest.raises(UserError, match="truncated"):
        read_tensor_file(tmp_path / "cut.safetensors")
    (tmp_path / "tiny.safetensors").write_bytes(data[:5])
    with pytest.raises(UserError, match="truncated or empty"):
        read_tensor_file(tmp_path / "tiny.safetensors")
    (tmp_path / "head.safetensors").write_bytes(data[:40])
    with pytest.raises(UserError, match="truncated"):
        read_meta(tmp_path / "head.safetensors")


def test_not_a_capture(tmp_path):
    (tmp_path / "x.txt").write_text("hello world, not safetensors at all")
    with pytest.raises(UserError):
        read_tensor_file(tmp_path / "x.txt")
    with pytest.raises(UserError, match="does not exist"):
        read_tensor_file(tmp_path / "missing.safetensors")


def test_one_meta_reader_for_paths_and_loaded_files(tmp_path):
    from safetensors.numpy import save_file

    path = write_capture(tmp_path / "a.safetensors", layer_outputs(), dtype="bf16")
    assert read_meta(path) == read_meta(read_tensor_file(path)) and read_meta(path)["dtype"] == "bf16"
    save_file({"x": np.zeros(2, dtype=np.float32)}, str(tmp_path / "plain.safetensors"))
    for source in (tmp_path / "plain.safetensors", read_tensor_file(tmp_path / "plain.safetensors")):
        with pytest.raises(UserError, match="not a hipwizard capture"):
            read_meta(source)
    save_file({"x": np.zeros(2, dtype=np.float32)}, str(tmp_path / "bad.safetensors"), metadata={"hipwizard": "{oops"})
    with pytest.raises(UserError, match="not valid JSON"):
        read_meta(tmp_path / "bad.safetensors")
