"""Helpers for parity tests: small capture files written with numpy (no torch needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from hipwizard.parity.tensorfile import META_KEY


def write_capture(path: Path, outputs: dict[str, np.ndarray], *, dtype: str = "fp32", kind: str = "model",
                  inputs: dict[str, np.ndarray] | None = None, **meta) -> Path:
    """A hipwizard capture file with the given module outputs (in order) and metadata."""
    inputs = inputs if inputs is not None else {"input_ids": np.arange(8, dtype=np.int64).reshape(2, 4)}
    tensors = {f"input/{k}": v for k, v in inputs.items()}
    tensors.update({f"output/{k}": np.ascontiguousarray(v) for k, v in outputs.items()})
    full = {"format": "hipwizard-parity/1", "kind": kind, "dtype": dtype, "device": "cpu", "device_name": "CPU test",
            "torch": "test", "model": {"name": "m", "config_hash": "c0", "weights_hash": "w0"},
            "modules": [{"name": n, "order": i, "shape": list(v.shape)} for i, (n, v) in enumerate(outputs.items())]}
    full.update(meta)
    save_file(tensors, str(path), metadata={META_KEY: json.dumps(full)})
    return path


def layer_outputs(seed: int = 0, n: int = 4, shape=(2, 4, 16)) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"model.layers.{i}.mlp": rng.standard_normal(shape).astype(np.float32) for i in range(n)}
