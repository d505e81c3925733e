"""The Train step's services, as both faces call them: plan on the doctor's GPU, launch and remember, the demo
run from the one demo definition, stop, list."""

from __future__ import annotations

import os

import pytest
import yaml

from hipwizard.doctor.models import DoctorReport, EnvReport, GpuInfo
from hipwizard.doctor.state import save_report
from hipwizard.errors import UserError
from hipwizard.progress import Progress
from hipwizard.train import services, state
from hipwizard.train.planning.presets import preset_config
from hipwizard.train.run.launcher import LaunchOptions
from hipwizard.train.run.runs import run_info
from hipwizard.workspace import Workspace

from .helpers import launchable_values, run_dir_with, script, wait_for
from .plan_fixtures import recipe_dir

GIB = 1024 ** 3


def _save_doctor_gpu(ws: Workspace, name: str, vram_gib: float, gfx: str) -> None:
    env = EnvReport(gpus=[GpuInfo(0, "amd", name, gfx=gfx, vram_bytes=int(vram_gib * GIB))], gpu_source="rocminfo")
    save_report(ws, DoctorReport(env, [], origin="live"))


def test_plan_targets_the_doctors_gpu_unless_told_otherwise(tmp_path):
    ws = Workspace(recipe_dir(tmp_path))
    config = preset_config("nvidia-recipe")
    assert services.plan(config, ws=ws).device.name == "AMD Instinct MI300X"  # no report: the default
    _save_doctor_gpu(ws, "AMD Instinct MI210", 64.0, "gfx90a")
    seen: list[Progress] = []
    plan = services.plan(config, ws=ws, progress=seen.append)
    assert (plan.device.name, plan.device.vram_gib, plan.device.source) == ("AMD Instinct MI210", 64.0, "doctor report")
    assert plan.estimate.device_vram_gib == 64.0 and seen[-1].finished
    told = services.plan(config, ws=ws, device=services.target_device(ws, device="h200"))
    assert told.device.name == "NVIDIA H200"


def test_plan_refuses_bad_sizes_in_one_line(tmp_path):
    config = preset_config("nvidia-recipe")
    with pytest.raises(UserError, match="^the number of GPUs must be between 1 and 4096") as gpus:
        services.plan(config, gpus=0)
    with pytest.raises(UserError, match="^VRAM must be a positive size") as vram:
        services.target_device(None, vram_gib=-1)
    assert (gpus.value.field, vram.value.field) == ("gpus", "vram")  # the user's words; the field says which value


def test_the_cli_names_the_flag_of_the_field_at_fault(tmp_path, capsys):
    from hipwizard.cli import main

    (tmp_path / "c.yaml").write_text("model_name_or_path: m\n", encoding="utf-8")
    assert main(["train", "plan", str(tmp_path / "c.yaml"), "--vram", "-1", "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "VRAM must be a positive size in GiB, not -1 (--vram)" in err and "--vram must" not in err


def test_plan_file_notes_the_keys_it_keeps(tmp_path):
    ws = Workspace(recipe_dir(tmp_path))
    plan = services.plan_file(ws.root / "recipe.yaml", ws=ws)
    assert plan.valid and any("kept as written" in n and "ddp_timeout" in n for n in plan.notes)


def test_launch_records_the_run_and_list_finds_it_anywhere(tmp_path):
    ws = Workspace(tmp_path / "ws")
    elsewhere = run_dir_with(tmp_path / "elsewhere", name="far")
    launched = services.launch(ws, elsewhere, LaunchOptions(platform="cpu",
                                                             llamafactory_cli=script(tmp_path, "exit 0\n")))
    assert launched.warnings == [] and launched.run_dir == str(elsewhere.resolve())
    assert state.load(ws).last_run == launched.run_dir
    wait_for(lambda: run_info(elsewhere).state == "finished", 30)
    planned = run_dir_with(ws.runs_dir, name="planned")
    assert [r.name for r in services.list_runs(ws)] == ["far"]
    runs = services.list_runs(ws, planned=True)
    assert [(r.name, r.state) for r in runs] == [("far", "finished"), ("planned", "not launched")]
    assert str(planned.resolve()) == runs[1].run_dir


def test_launch_a_config_file_copies_it_into_a_new_run_dir(tmp_path):
    ws = Workspace(tmp_path / "ws")
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(yaml.safe_dump(launchable_values(tmp_path)))
    launched = services.launch(ws, cfg, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "exit 0\n")))
    assert launched.run_dir.startswith(str(ws.runs_dir.resolve() / "mine-"))
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    with pytest.raises(UserError, match="neither a run directory, a .yaml config nor a .sh"):
        services.launch(ws, notes, LaunchOptions(platform="cpu"))
    with pytest.raises(UserError, match="does not exist"):
        services.launch(ws, tmp_path / "missing.yaml", LaunchOptions(platform="cpu"))


def test_stop_of_a_folder_that_never_ran_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="has no run.json"):
        services.stop(run_dir_with(tmp_path))


def test_demo_run_is_the_demo_preset_on_cpu(tmp_path, monkeypatch, demo_assets):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(demo_assets.root, cache / "demo-v1")  # the session's built demo, where the service looks
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    ws = Workspace(tmp_path / "ws")
    seen: list[Progress] = []
    launched = services.launch_demo(ws, LaunchOptions(llamafactory_cli=script(tmp_path, "exit 0\n")),
                                    progress=seen.append)
    manifest = launched.manifest
    assert manifest.platform == "cpu" and manifest.env_delta["HF_HUB_OFFLINE"] == "1"
    assert manifest.env_delta["DISABLE_VERSION_CHECK"] == "1"
    cfg = yaml.safe_load((ws.runs_dir / manifest.name / "config.yaml").read_text())
    demo = preset_config("demo")
    assert (cfg["lora_rank"], cfg["cutoff_len"], cfg["max_steps"]) == (demo.lora_rank, demo.cutoff_len, demo.max_steps)
    assert cfg["model_name_or_path"] == str(cache / "demo-v1" / "model")
    assert cfg["include_num_input_tokens_seen"] is True and "zero_stage" not in cfg
    assert state.load(ws).last_run == launched.run_dir
    assert any(p.stage == "launching" for p in seen)


def test_init_run_dir_of_the_demo_matches_the_demo_run(tmp_path, monkeypatch, demo_assets):
    """One definition: `train init --demo` and the demo run write the same YAML."""
    from hipwizard.train.demo import demo_values

    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(demo_assets.root, cache / "demo-v1")
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    run, _ = services.init_run_dir(tmp_path / "d", "demo")
    assert yaml.safe_load(run.config_path.read_text()) == demo_values()


def test_init_run_dir_of_a_zero3_preset_writes_the_deepspeed_json_not_the_derived_keys(tmp_path):
    run, config = services.init_run_dir(tmp_path / "r", "nvidia-recipe")
    data = yaml.safe_load(run.config_path.read_text())
    assert config.zero_stage == 3 and data["deepspeed"] == "ds_config.json" and run.deepspeed_path.is_file()
    assert not {"zero_stage", "offload_optimizer", "offload_param"} & set(data)


def test_save_plan_names_the_folder_under_runs_and_refuses_a_path_as_a_name(tmp_path):
    ws = Workspace(recipe_dir(tmp_path))
    config = preset_config("nvidia-recipe")
    run = services.save_plan(config, ws=ws, name=" mine ")
    assert run.path == (ws.runs_dir / "mine").resolve() and run.config_path.is_file()
    for bad in ("", "../up", ".hidden", "a/b"):
        with pytest.raises(UserError, match="plain name") as refused:
            services.save_plan(config, ws=ws, name=bad)
        assert refused.value.field == "name"
    assert sorted(p.name for p in ws.runs_dir.iterdir()) == ["mine"]  # nothing written for the refusals

