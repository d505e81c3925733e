"""The embedded demo's training run: a short LoRA job on the tiny model, on CPU, in seconds.

``demo_config`` is pure; ``build_demo_assets`` builds the tiny model in a subprocess (the caller may be
the UI process, which never imports torch); ``write_demo_run_dir`` writes a run directory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.train.manifest import CONFIG_NAME


def demo_config(model_dir: str, dataset_dir: str, dataset: str, *, max_steps: int = 12) -> dict[str, Any]:
    """A LLaMA-Factory LoRA config that trains the tiny demo model on CPU (bf16 off: CPUs reject it)."""
    return {
        "model_name_or_path": model_dir, "trust_remote_code": False,
        "stage": "sft", "do_train": True, "finetuning_type": "lora", "lora_target": "all", "lora_rank": 4,
        "dataset": dataset, "dataset_dir": dataset_dir, "template": "llama3", "cutoff_len": 128,
        "max_samples": 64, "overwrite_cache": True, "preprocessing_num_workers": 1,
        "output_dir": "output", "overwrite_output_dir": True, "logging_steps": 1, "save_steps": 100000,
        "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, "learning_rate": 1.0e-3,
        "max_steps": max_steps, "lr_scheduler_type": "cosine", "bf16": False, "report_to": "none",
        "include_num_input_tokens_seen": True,
    }


def build_demo_assets(timeout: float = 600) -> dict[str, str]:
    """Build (or reuse) the tiny model in a subprocess; returns its JSON description."""
    proc = subprocess.run([sys.executable, "-m", "hipwizard.demo_model"], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"could not build the demo model: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_demo_run_dir(parent: Path, assets: dict[str, str], *, max_steps: int = 12, name: str | None = None) -> Path:
    """A new run directory under ``parent`` with the demo config.yaml."""
    run_dir = parent / (name or time.strftime("demo-lora-%Y%m%d-%H%M%S"))
    cfg = demo_config(assets["model"], assets["dataset_dir"], assets["dataset"], max_steps=max_steps)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / CONFIG_NAME, yaml.safe_dump(cfg, sort_keys=False))
    except OSError as exc:
        raise UserError(f"cannot write the demo run directory {run_dir}: {exc.strerror or exc}") from None
    return run_dir

