"""The Train step's demo: a short LoRA run of the ``demo`` preset on the tiny model, on CPU, in seconds.

One definition: the ``demo`` preset in ``assets/train_presets.yaml`` (rank 8, cutoff 256, 8 steps), used by
the Plan tab's demo preset, ``train init --demo``, ``train run --demo`` and the Train screen's demo run.
One builder: ``hipwizard.demo_model.build`` (the parity step calls it in its worker process); here it runs
in a subprocess, because the caller may be the UI process, which never imports torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml.comments import CommentedMap

from hipwizard.demo_model import DemoAssets, demo_assets
from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.config.yaml_io import render_yaml
from hipwizard.train.planning.presets import DEMO_PRESET, preset_config, preset_document
from hipwizard.train.run.rundir import save_run_dir

# The demo runs offline and must not stop to ask about library versions.
DEMO_ENV = {"DISABLE_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1"}


def prepare(ws) -> None:
    """The demo workspace's hook: nothing to write up front. The Plan tab opens on the demo preset there
    (it reads the workspace's demo flag), and the tiny model is built when something first needs it."""

def ensure_demo_built(root: Path | None = None, *, timeout: float = 600.0,
                      progress: ProgressFn | None = None) -> DemoAssets:
    """Build (or reuse) the tiny model and dataset in a subprocess; returns where they are."""
    assets = demo_assets(root)
    if assets.ready:
        return assets
    if progress is not None:
        progress(Progress("building the tiny demo model (offline, once)"))
    argv = [sys.executable, "-m", "hipwizard.demo_model"] + (["--out", str(root)] if root else [])
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"building the demo model took longer than {timeout:g} s; try again") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"building the demo model failed: {tail[0]}")
    built = demo_assets(Path(json.loads(proc.stdout.strip().splitlines()[-1])["root"]))
    if progress is not None:
        progress(Progress("building the tiny demo model (offline, once)", 1, 1))
    return built


def demo_run_config(root: Path | None = None, *, max_steps: int | None = None) -> tuple[TrainConfig, CommentedMap]:
    """The demo preset as (config, YAML document), ``max_steps`` overridden when given."""
    config = preset_config(DEMO_PRESET, root)
    document = preset_document(DEMO_PRESET, root)
    if max_steps is not None:
        config.max_steps = max_steps
    return config, document


def demo_values(root: Path | None = None, *, max_steps: int | None = None) -> dict[str, Any]:
    """The demo's LLaMA-Factory YAML values as a plain dict (what ``config.yaml`` of a demo run holds)."""

    config, document = demo_run_config(root, max_steps=max_steps)
    return yaml.safe_load(render_yaml(config, document))


def write_demo_run_dir(parent: Path, root: Path | None = None, *, max_steps: int | None = None,
                       name: str | None = None) -> Path:
    """A new run directory under ``parent`` holding the demo's config.yaml; returns it."""
    run_dir = Path(parent) / (name or time.strftime("demo-lora-%Y%m%d-%H%M%S"))
    config, document = demo_run_config(root, max_steps=max_steps)
    return save_run_dir(run_dir, config, document).path
