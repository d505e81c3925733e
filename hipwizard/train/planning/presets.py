"""Presets: the NVIDIA recipe as users bring it, MI300X-minded layouts of it, and the CPU demo.

They live in ``assets/train_presets.yaml``. ``preset_config(name)`` gives a ``TrainConfig`` (every preset
value counts as set, so it is written to the YAML); ``preset_document(name)`` the same values as a YAML
document, so keys ``TrainConfig`` does not hold (``include_num_input_tokens_seen``, ...) are written too.
The demo preset's ``{demo_model}``/``{demo_data}`` are filled from ``hipwizard.demo_model.demo_assets()``
(paths only: building the model needs torch and runs in a subprocess, see ``train.demo``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml.comments import CommentedMap

from hipwizard.demo_model import demo_assets
from hipwizard.errors import UserError
from hipwizard.paths import assets_dir
from hipwizard.train.config.train_config import DERIVED_FIELDS, TrainConfig, build_config

DEFAULT_PRESET = "nvidia-recipe"
DEMO_PRESET = "demo"


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


def preset_values(name: str, demo_root: Path | None = None) -> dict[str, Any]:
    """The preset's YAML values, placeholders filled with the demo's paths (built or not)."""
    assets = demo_assets(demo_root)
    fill = {"{demo_model}": str(assets.model_dir), "{demo_data}": str(assets.dataset_dir)}
    return {k: fill.get(v, v) if isinstance(v, str) else v for k, v in get_preset(name).values.items()}


def preset_config(name: str, demo_root: Path | None = None) -> TrainConfig:
    """The preset as a config (every value counts as set)."""
    config, errors = build_config(preset_values(name, demo_root))
    if errors:  # a shipped preset is data we control: an error here is a bug, say which
        raise UserError(f"preset {name} is invalid: {errors[0][1]}")
    return config


def preset_document(name: str, demo_root: Path | None = None) -> CommentedMap:
    """The preset as a YAML document (for ``save_run_dir``: its keys TrainConfig does not know are kept)."""
    # zero_stage & co. describe the DeepSpeed JSON: never YAML keys (LLaMA-Factory would reject them).
    return CommentedMap((k, v) for k, v in preset_values(name, demo_root).items() if k not in DERIVED_FIELDS)
