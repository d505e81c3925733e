"""Presets: the NVIDIA recipe as users bring it, MI300X-minded layouts of it, and the CPU demo.

They live in ``assets/train_presets.yaml``. ``preset_config(name)`` gives a ``TrainConfig`` (every preset
value counts as set, so it is written to the YAML); the demo preset's ``{demo_model}``/``{demo_data}``
are filled from ``hipwizard.demo_model.demo_assets()`` (paths only: building the model needs torch and
runs in a subprocess, see ``ensure_demo_built``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from hipwizard.errors import UserError
from hipwizard.paths import assets_dir
from hipwizard.train.config import TrainConfig, build_config

DEFAULT_PRESET = "nvidia-recipe"


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    description: str
    values: dict[str, Any]


@lru_cache(maxsize=1)
def load_presets() -> dict[str, Preset]:
    data = yaml.safe_load((assets_dir() / "train_presets.yaml").read_text(encoding="utf-8")) or {}
    return {
        name: Preset(name, str(p.get("title", name)), " ".join(str(p.get("description", "")).split()), dict(p["values"]))
        for name, p in data.items()
    }


def get_preset(name: str) -> Preset:
    presets = load_presets()
    if name not in presets:
        raise UserError(f"unknown preset {name!r}; choose one of: {', '.join(presets)}")
    return presets[name]


def preset_config(name: str, demo_root: Path | None = None) -> TrainConfig:
    """The preset as a config; placeholders filled with the demo's paths (built or not)."""
    from hipwizard.demo_model import demo_assets

    assets = demo_assets(demo_root)
    fill = {"{demo_model}": str(assets.model_dir), "{demo_data}": str(assets.dataset_dir)}
    values = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in get_preset(name).values.items()}
    config, errors = build_config(values)
    if errors:  # a shipped preset is data we control: an error here is a bug, say which
        raise UserError(f"preset {name} is invalid: {errors[0][1]}")
    return config


def ensure_demo_built(demo_root: Path | None = None, timeout: float = 600.0) -> Path:
    """Build the demo model and dataset in a subprocess (torch stays out of this process)."""
    from hipwizard.demo_model import demo_assets

    assets = demo_assets(demo_root)
    if assets.ready:
        return assets.root
    argv = [sys.executable, "-m", "hipwizard.demo_model"] + (["--out", str(demo_root)] if demo_root else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"building the demo model failed: {tail[0]}")
    return Path(json.loads(proc.stdout.strip().splitlines()[-1])["root"])
