"""Launcher: the environment a run gets, the manifest, bad input, and the real llamafactory-cli end to end."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from hipwizard.errors import UserError
from hipwizard.train.demo import demo_values
from hipwizard.train.run.launcher import LaunchOptions, build_environment, launch
from hipwizard.train.run.manifest import load_manifest, read_exit
from hipwizard.train.run.runs import run_info
from hipwizard.train.run.stop import stop_run
from hipwizard.train.run.watch import RunWatch

from .helpers import LF_ENV, pids_alive, run_dir_with, script, wait_for

OUT = Path("/tmp/out")


def test_deepspeed_forces_torchrun_and_gpus_select_by_platform():
    env, removed = build_environment({"deepspeed": "ds_config.json"}, LaunchOptions(gpus=[2, 3]), "rocm",
                                     {"CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin"}, OUT)
    assert env["FORCE_TORCHRUN"] == "1" and env["NPROC_PER_NODE"] == "2"
    assert env["HIP_VISIBLE_DEVICES"] == "2,3" and "CUDA_VISIBLE_DEVICES" not in env
    assert removed == ["CUDA_VISIBLE_DEVICES"]  # torch on ROCm would filter a second time
    assert env["RECORD_VRAM"] == "1" and env["LLAMABOARD_ENABLED"] == "1"

    env, removed = build_environment({}, LaunchOptions(gpus=[1]), "cuda", {}, OUT)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "FORCE_TORCHRUN" not in env and removed == []


def test_multi_node_needs_master_and_sets_all_four():
    with pytest.raises(UserError, match="master"):
        build_environment({}, LaunchOptions(nnodes=2), "rocm", {}, OUT)
    env, _ = build_environment({}, LaunchOptions(nnodes=2, node_rank=1, master_addr="10.0.0.1", master_port=29500,
                                                  nproc_per_node=8), "rocm", {}, OUT)
    assert (env["NNODES"], env["NODE_RANK"], env["MASTER_ADDR"], env["MASTER_PORT"]) == ("2", "1", "10.0.0.1", "29500")
    assert env["FORCE_TORCHRUN"] == "1" and env["NPROC_PER_NODE"] == "8"


def test_cpu_runs_one_process():
    env, _ = build_environment({"deepspeed": "z3.json"}, LaunchOptions(), "cpu", {}, OUT)
    assert env["NPROC_PER_NODE"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""


def test_run_dir_without_config_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="has no config.yaml"):
        launch(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        launch(tmp_path / "nope")
    (tmp_path / "config.yaml").write_text("- just\n- a list\n")
    with pytest.raises(UserError, match="mapping"):
        launch(tmp_path)


def test_unwritable_run_dir_is_a_user_error_and_nothing_starts(tmp_path):
    d = run_dir_with(tmp_path)
    (d / "train.log").mkdir()  # the log cannot be opened for writing (as on a read-only disk)
    with pytest.raises(UserError, match="cannot write"):
        launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 30\n")))
    assert load_manifest(d) is None


def test_manifest_and_a_process_that_dies_before_writing_anything(tmp_path):
    d = run_dir_with(tmp_path)
    m = launch(d, LaunchOptions(platform="cpu", gpus=None, llamafactory_cli=script(tmp_path, "exit 3\n")))
    saved = json.loads((d / "run.json").read_text())
    assert saved["pid"] == m.pid == saved["pgid"] and saved["command"][1:] == ["train", "config.yaml"]
    assert saved["env_delta"]["RECORD_VRAM"] == "1" and saved["versions"]["llamafactory"]
    assert os.getsid(0) != m.pgid
    end = wait_for(lambda: read_exit(d), 30)
    assert end.returncode == 3
    # exit.json is written just before the supervisor itself exits: wait for that too (no race)
    info = wait_for(lambda: (lambda i: i if i.state != "running" else None)(run_info(d)), 30)
    assert info.state == "failed" and "died before writing anything" in info.cause and "3" in info.cause


def _lora_run_dir(tmp_path, assets, steps: int) -> Path:
    cfg = demo_values(assets.root, max_steps=steps)
    return run_dir_with(tmp_path, cfg, name=f"lora-{steps}")


@pytest.mark.slow
def test_real_llamafactory_lora_end_to_end_tail_and_graceful_stop(tmp_path, demo_assets):
    """Real llamafactory-cli on the tiny model, on CPU: launched, tailed, stopped; no process survives."""
    d = _lora_run_dir(tmp_path, demo_assets, steps=2000)
    m = launch(d, LaunchOptions(platform="cpu", extra_env=LF_ENV))
    watch = RunWatch(d)
    watch.attach()

    def enough_points():
        watch.poll()
        return len(watch.history.points) >= 4

    wait_for(enough_points, timeout=120, poll=0.3)
    pts = watch.history.points
    assert [p.step for p in pts[:4]] == [1, 2, 3, 4]
    assert pts and all(p.total_steps == 2000 and math.isfinite(p.loss) and 0 < p.loss < 20 for p in pts)
    assert pts[0].lr == pytest.approx(1e-3) and pts[3].lr < pts[0].lr  # cosine schedule
    assert watch.history.last.total_tokens > 0
    assert run_info(d).state == "running"

    from hipwizard.train.run.stop import run_processes

    tree = set(run_processes(m))
    assert len(tree) >= 2  # supervisor + trainer
    result = stop_run(m, grace_s=60, term_s=10)
    assert result.clean and result.steps[0].startswith("SIGABRT")
    assert pids_alive(tree) == []
    end = read_exit(d)
    assert end.returncode == 0  # the Trainer stopped on its own and saved
    assert (d / "output" / "adapter_model.safetensors").is_file()
    assert run_info(d).state == "stopped"
    watch.poll()
    assert watch.history.progress[0] >= 4


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HIPWIZARD_ZERO3") != "1",
                    reason="DeepSpeed ZeRO-3 on CPU takes ~2 min: set HIPWIZARD_ZERO3=1 to run it")
def test_real_llamafactory_zero3_on_cpu_through_torchrun(tmp_path, demo_assets):
    """FORCE_TORCHRUN=1 with one process: torchrun + DeepSpeed ZeRO-3 on CPU, launched and tailed to the end."""
    d = _lora_run_dir(tmp_path, demo_assets, steps=3)
    ds = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 3}, "bf16": {"enabled": False}, "fp16": {"enabled": False}}
    (d / "ds_config.json").write_text(json.dumps(ds))
    import yaml

    cfg = yaml.safe_load((d / "config.yaml").read_text())
    cfg["deepspeed"] = "ds_config.json"
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    m = launch(d, LaunchOptions(platform="cpu", extra_env={**LF_ENV, "DS_ACCELERATOR": "cpu"}))
    assert m.env_delta["FORCE_TORCHRUN"] == "1" and m.env_delta["NPROC_PER_NODE"] == "1"
    wait_for(lambda: run_info(d).state != "running", timeout=400, poll=1)
    info = run_info(d)
    assert info.state == "finished", info.cause
    watch = RunWatch(d)
    watch.attach()
    assert [p.step for p in watch.history.points] == [1, 2, 3]
