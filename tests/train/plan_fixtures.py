"""Shared helpers of the plan tests: the recipe fixture, an 8B shape from a real config.json."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "train"


def recipe_dir(tmp_path: Path) -> Path:
    """A copy of the fixture folder (recipe.yaml, m8b/config.json, data/, ds_z3_config.json)."""
    dest = tmp_path / "recipe"
    shutil.copytree(FIXTURES, dest)
    return dest


def recipe_values(**overrides) -> dict:
    """The NVIDIA recipe's values as TrainConfig keyword arguments."""
    values = dict(
        model_name_or_path="m8b", finetuning_type="lora", lora_target="q_proj,v_proj", lora_rank=8,
        dataset="alpaca_en_demo", dataset_dir="data", template="llama3", cutoff_len=1024, bf16=True,
        per_device_train_batch_size=4, gradient_accumulation_steps=4, learning_rate=5e-5,
        lr_scheduler_type="cosine", num_train_epochs=3.0, zero_stage=3, output_dir="out", do_train=True,
    )
    values.update(overrides)
    return values
