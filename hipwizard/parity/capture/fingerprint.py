"""Fingerprints that prove two machines ran the same model: a config hash and a weights hash.

Both are computed from the files of the model folder, without torch, so a mismatch is refused before
anything heavy loads. The weights hash covers tensor names, dtypes, shapes and bytes — not the file
header's layout or metadata — so re-saving the same weights gives the same hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.parity.tensorfile import read_header

# Keys that change when a model is re-saved but not what it computes.
_VOLATILE_CONFIG_KEYS = {"transformers_version", "_name_or_path", "torch_dtype", "dtype", "use_cache"}
_CHUNK = 16 * 1024 * 1024


def config_hash(model_dir: str | Path) -> str:
    """sha256 (first 16 hex digits) of config.json in canonical form, volatile keys removed."""
    path = Path(model_dir) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{model_dir} is not a Hugging Face model folder (no config.json)") from None
    except ValueError:
        raise UserError(f"{path} is not valid JSON") from None
    canonical = {k: v for k, v in config.items() if k not in _VOLATILE_CONFIG_KEYS}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]


def weights_hash(model_dir: str | Path) -> str:
    """sha256 (first 16 hex digits) over every weight tensor of the folder, in name order."""
    folder = Path(model_dir)
    files = sorted(folder.glob("*.safetensors"))
    digest = hashlib.sha256()
    if files:
        entries = []
        for f in files:
            header, offset, _size = read_header(f)
            header.pop("__metadata__", None)
            for name, info in header.items():
                entries.append((name, f, offset, info))
        for name, f, offset, info in sorted(entries, key=lambda e: e[0]):
            start, end = info["data_offsets"]
            digest.update(f"{name}|{info['dtype']}|{info['shape']}|".encode())
            with f.open("rb") as fh:
                fh.seek(offset + start)
                left = end - start
                while left > 0:
                    chunk = fh.read(min(_CHUNK, left))
                    if not chunk:
                        raise UserError(f"{f} is truncated (tensor {name!r})")
                    digest.update(chunk)
                    left -= len(chunk)
        return digest.hexdigest()[:16]
    bins = sorted(folder.glob("*.bin"))
    if not bins:
        raise UserError(f"{model_dir} holds no weights (*.safetensors or *.bin)")
    for f in bins:  # pickled checkpoints: whole-file hash is the best we can do without torch
        with f.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()[:16]
