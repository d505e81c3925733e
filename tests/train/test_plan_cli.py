"""`hipwizard train plan` / `train init` end to end through the real CLI entry point."""

import json
import os

import pytest
import yaml

from hipwizard.cli import main
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.run.rundir import save_run_dir
from tests.train.plan_fixtures import recipe_dir, recipe_values


def run(capsys, *argv):
    code = main(["train", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_of_the_recipe_on_an_h200(tmp_path, capsys):
    cfg = recipe_dir(tmp_path) / "recipe.yaml"
    code, out, err = run(capsys, "plan", str(cfg), "--device", "h200", "--seq-len", "830")
    assert code == 0, err
    assert "✔ ok: no problems found" in out and "✔ fits" in out
    assert "1. 2.84x  no DeepSpeed, ckpt off, batch 16 x 1" in out  # steady state; measured 2.88x
    assert "length variability" in out and "variable-length" in out  # the default allowance, named
    assert "kept as written" in out and "ddp_timeout" in out


def test_plan_with_fixed_length_data_drops_the_fragmentation_allowance(tmp_path, capsys):
    cfg = recipe_dir(tmp_path) / "recipe.yaml"
    args = ("plan", str(cfg), "--device", "h200", "--seq-len", "830", "--json")
    variable = json.loads(run(capsys, *args)[1])["estimate"]
    fixed = json.loads(run(capsys, *args, "--lengths", "fixed")[1])["estimate"]
    assert (variable["lengths"], fixed["lengths"]) == ("variable", "fixed")
    # the recipe (ZeRO-3, 4 x 4) measured 23.42 GiB on fixed-length data
    assert abs(fixed["total_gib"] - 23.42) / 23.42 <= 0.10
    assert variable["total_gib"] - fixed["total_gib"] > 2


def test_plan_json(tmp_path, capsys):
    cfg = recipe_dir(tmp_path) / "recipe.yaml"
    code, out, _ = run(capsys, "plan", str(cfg), "--vram", "192", "--json", "--gpus", "2")
    data = json.loads(out)
    assert code == 0 and data["valid"] and data["world_size"] == 2
    assert data["device"]["vram_gib"] == 192 and data["device"]["source"] == "the VRAM given"
    assert data["estimate"]["available"] and data["estimate"]["fits"]
    assert data["advice"]["suggestions"][0]["speedup"] > 1
    assert data["model"]["params"] == 8_030_261_248


def test_plan_reports_rule_errors_with_exit_1(tmp_path, capsys):
    base = recipe_dir(tmp_path)
    text = (base / "recipe.yaml").read_text().replace("template: llama3", "template: llama-3").replace(
        "bf16: true", "bf16: true\nfp16: true")
    (base / "bad.yaml").write_text(text)
    code, out, _ = run(capsys, "plan", str(base / "bad.yaml"))
    assert code == 1
    assert "✖ error: bf16 and fp16 are both on" in out and "template 'llama-3' is unknown" in out


@pytest.mark.parametrize("text, words", [
    ("model_name_or_path: [unclosed\n", "is not valid YAML at line 2"),
    ("- a\n- b\n", "must be a YAML mapping"),
])
def test_plan_malformed_yaml_is_exit_2_one_line(tmp_path, capsys, text, words):
    (tmp_path / "c.yaml").write_text(text)
    code, out, err = run(capsys, "plan", str(tmp_path / "c.yaml"))
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1


def test_plan_wrong_types_and_absurd_values(tmp_path, capsys):
    base = recipe_dir(tmp_path)
    text = (base / "recipe.yaml").read_text().replace("learning_rate: 5.0e-5", "learning_rate: -3").replace(
        "per_device_train_batch_size: 4", "per_device_train_batch_size: four")
    (base / "t.yaml").write_text(text)
    code, out, err = run(capsys, "plan", str(base / "t.yaml"))
    # bad input: one line naming the file and each value, exit 2, and no plan made from substituted defaults
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(base / "t.yaml") in err and "learning_rate: Input should be greater than 0" in err
    assert "per_device_train_batch_size: Input should be a valid integer" in err
    code, _, err = run(capsys, "plan", str(base / "recipe.yaml"), "--gpus", "0")
    assert code == 2 and "--gpus" in err
    code, _, err = run(capsys, "plan", str(base / "recipe.yaml"), "--vram", "-5")
    assert code == 2 and "--vram" in err


def test_plan_unknown_architecture_and_model_without_config(tmp_path, capsys):
    base = recipe_dir(tmp_path)
    for model, words, expected in [("unknown_arch", "not one the estimator knows", 0),
                                   ("data", "has no config.json", 1), ("./gone", "does not exist", 1)]:
        text = (base / "recipe.yaml").read_text().replace("model_name_or_path: m8b", f"model_name_or_path: {model}")
        (base / "u.yaml").write_text(text)
        code, out, _ = run(capsys, "plan", str(base / "u.yaml"))
        # unknown_arch: the config is fine, only the estimate cannot be made; a folder that is not a model
        # (or not there) fails the check: LLaMA-Factory could not load it
        assert code == expected
        assert "✖ cannot estimate memory" in out and words in out
        assert "⚠ no advice" in out


def test_init_writes_a_run_dir_from_the_recipe_preset(tmp_path, capsys):
    out_dir = tmp_path / "runs" / "r1"
    code, out, err = run(capsys, "init", "--out", str(out_dir))
    assert code == 0, err
    data = yaml.safe_load((out_dir / "config.yaml").read_text())
    assert data["deepspeed"] == "ds_config.json" and data["lora_target"] == "q_proj,v_proj"
    assert (data["per_device_train_batch_size"], data["gradient_accumulation_steps"], data["learning_rate"]) == (4, 4, 5e-5)
    ds = json.loads((out_dir / "ds_config.json").read_text())
    assert ds["zero_optimization"]["stage"] == 3
    assert sorted(p.name for p in tmp_path.joinpath("runs").iterdir()) == ["r1"]  # no temp folder left


def test_init_fast_preset_has_no_deepspeed_json(tmp_path, capsys):
    code, _, _ = run(capsys, "init", "--preset", "mi300x-lora-fast", "--out", str(tmp_path / "f"))
    assert code == 0 and not (tmp_path / "f" / "ds_config.json").exists()
    assert yaml.safe_load((tmp_path / "f" / "config.yaml").read_text())["disable_gradient_checkpointing"] is True


def test_init_refuses_a_launched_run_and_bad_presets(tmp_path, capsys):
    run_dir = tmp_path / "r"
    save_run_dir(run_dir, TrainConfig(**recipe_values()))
    (run_dir / "run.json").write_text("{}")
    code, _, err = run(capsys, "init", "--out", str(run_dir))
    assert code == 2 and "already holds a launched run" in err
    with pytest.raises(SystemExit):
        main(["train", "init", "--preset", "nope", "--out", str(tmp_path / "x")])


def test_init_where_a_folder_cannot_be_made_leaves_nothing(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    code, _, err = run(capsys, "init", "--out", str(tmp_path / "afile" / "r"))
    assert code == 2 and "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    code, _, err = run(capsys, "init", "--out", str(tmp_path / "afile"))
    assert code == 2 and "not a directory" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_init_into_read_only_folder_leaves_nothing(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code, _, err = run(capsys, "init", "--out", str(ro / "r"))
    finally:
        ro.chmod(0o755)
    assert code == 2 and "cannot write" in err and list(ro.iterdir()) == []


def test_init_demo_plans_clean(tmp_path, capsys, monkeypatch, demo_assets):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "demo-v1").symlink_to(demo_assets.root)  # the session's built demo, found where init looks
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    code, _, err = run(capsys, "init", "--demo", "--out", str(tmp_path / "d"))
    assert code == 0, err
    data = yaml.safe_load((tmp_path / "d" / "config.yaml").read_text())
    assert data["model_name_or_path"].endswith("model") and data["dataset"] == "hipwizard_demo"
    code, out, _ = run(capsys, "plan", str(tmp_path / "d" / "config.yaml"), "--vram", "16")
    assert code == 0 and "✔ ok: no problems found" in out and "✔ fits" in out


def test_every_gpu_preset_plans_as_its_init_hint_says(tmp_path, capsys, monkeypatch):
    """`train init --preset X` then the `train plan` its hint prints: a plan with no error (the preset's
    dataset must not be one that exists only in LLaMA-Factory's repository)."""
    from hipwizard.train.planning.presets import DEMO_PRESET, load_presets

    monkeypatch.chdir(tmp_path)
    for name in sorted(set(load_presets()) - {DEMO_PRESET}):
        assert main(["train", "init", "--preset", name, "--out", name]) == 0
        hint = capsys.readouterr().out.split("next: hipwizard ", 1)[1].split("   then:")[0].split()
        assert hint[:2] == ["train", "plan"], hint
        code = main([*hint, "--vram", "192"])
        out = capsys.readouterr().out
        assert code == 0 and "✖" not in out, (name, out)
