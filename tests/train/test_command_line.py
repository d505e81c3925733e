"""A team's ``train.sh`` (``llamafactory-cli train --key value ...``) is accepted wherever a config is."""

from __future__ import annotations

from hipwizard.cli import main
from hipwizard.train.config.yaml_io import load_yaml

from .plan_fixtures import recipe_dir

SCRIPT = """#!/bin/bash
# the team's launcher
FORCE_TORCHRUN=1 llamafactory-cli train \\
    --model_name_or_path {model} \\
    --stage sft --do_train \\
    --finetuning_type lora --lora_target q_proj,v_proj \\
    --dataset alpaca_en_demo --dataset_dir {data} \\
    --template llama3 --cutoff_len=1024 \\
    --learning_rate 5e-5 --num_train_epochs 3.0 \\
    --per_device_train_batch_size 4 --gradient_accumulation_steps 4 \\
    --output_dir saves/x --bf16 true --my_custom_flag 7 \\
    --deepspeed {ds}
"""


def test_a_train_sh_is_read_as_its_config_nothing_dropped(tmp_path, capsys):
    base = recipe_dir(tmp_path)
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(model=base / "m8b", data=base / "data", ds=base / "ds_z3_config.json"))
    loaded = load_yaml(script)
    doc = {str(k): v for k, v in loaded.document.items()}
    assert len(doc) == 17 and doc["do_train"] is True and doc["my_custom_flag"] == 7
    assert doc["cutoff_len"] == 1024 and doc["learning_rate"] == 5e-5 and doc["lora_target"] == "q_proj,v_proj"
    assert loaded.config.zero_stage == 3 and loaded.unknown_keys == ["my_custom_flag"]
    assert any("converted from the llamafactory-cli train command in train.sh: 17 option(s)" in n for n in loaded.notes)
    assert main(["train", "plan", str(script), "--vram", "192"]) == 0
    out = capsys.readouterr().out
    assert "converted from the llamafactory-cli train command" in out and "my_custom_flag" in out


def test_a_command_line_over_a_base_config_with_key_value_overrides(tmp_path):
    base = recipe_dir(tmp_path)
    line = tmp_path / "run.sh"
    line.write_text(f"llamafactory-cli train {base / 'recipe.yaml'} learning_rate=1e-4 lora_rank=16 extra_key=x\n")
    loaded = load_yaml(line)
    assert loaded.config.learning_rate == 1e-4 and loaded.config.lora_rank == 16
    assert loaded.document["extra_key"] == "x" and loaded.config.template == "llama3"  # the base's own values stay
