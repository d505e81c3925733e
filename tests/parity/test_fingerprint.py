from __future__ import annotations

import json
import shutil

import numpy as np
from safetensors.numpy import save_file

from hipwizard.parity.capture.fingerprint import config_hash, weights_hash
from hipwizard.parity.tensorfile import read_tensor_file


def _model(folder, weights, config):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "np"})
    return folder


def test_weights_hash_ignores_header_layout_but_not_values(tmp_path):
    w = {"a": np.arange(6, dtype=np.float32), "b": np.ones((2, 2), dtype=np.float32)}
    m1 = _model(tmp_path / "m1", w, {"hidden_size": 4, "transformers_version": "4.0"})
    m2 = tmp_path / "m2"
    m2.mkdir()
    (m2 / "config.json").write_text(json.dumps({"transformers_version": "5.6", "hidden_size": 4}))
    save_file(dict(reversed(list(w.items()))), str(m2 / "model.safetensors"), metadata={"other": "x"})
    assert weights_hash(m1) == weights_hash(m2)
    assert config_hash(m1) == config_hash(m2)
    w2 = dict(w, a=w["a"] + 1)
    m3 = _model(tmp_path / "m3", w2, {"hidden_size": 5})
    assert weights_hash(m3) != weights_hash(m1) and config_hash(m3) != config_hash(m1)


def test_demo_model_hash_matches_its_files(demo_assets, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(demo_assets.model_dir, copy)
    assert weights_hash(copy) == weights_hash(demo_assets.model_dir)
    assert len(read_tensor_file(copy / "model.safetensors").tensors) > 5
