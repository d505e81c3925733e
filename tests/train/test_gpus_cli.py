"""``--gpus`` means the same in every Train command: a number is how many GPUs, a comma list which ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.train.run.gpus import GPUS_HELP

from .plan_fixtures import recipe_dir


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_every_train_command_says_the_same_words(capsys):
    for cmd in ("plan", "run", "calibrate"):
        text = _help(capsys, "train", cmd)
        assert GPUS_HELP in text, (cmd, text)


def _world_size(capsys, cfg: Path, gpus: str) -> int:
    assert main(["train", "plan", str(cfg), "--vram", "192", "--json", "--gpus", gpus]) == 0
    return json.loads(capsys.readouterr().out)["world_size"]


def test_plan_takes_a_count_or_device_ids(tmp_path, capsys):
    cfg = recipe_dir(tmp_path) / "recipe.yaml"
    assert _world_size(capsys, cfg, "2") == _world_size(capsys, cfg, "0,1") == 2
    assert _world_size(capsys, cfg, "3,") == 1
    for bad, words in (("0", "between 1 and"), ("0,0", "twice"), ("a,b", "device ids"), ("-1", "device ids")):
        assert main(["train", "plan", str(cfg), "--gpus", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("hipwizard: error: --gpus") and words in err and len(err.splitlines()) == 1, err


def _launched_env(tmp_path, capsys, monkeypatch, *gpus: str) -> dict[str, str]:
    from hipwizard.train.run import launcher

    from .helpers import run_dir_with, script

    fake = script(tmp_path, "exit 0\n")
    monkeypatch.setattr(launcher, "find_llamafactory_cli", lambda explicit=None: fake)
    d = run_dir_with(tmp_path, name=f"run-{len(list(tmp_path.iterdir()))}")
    assert main(["train", "run", str(d), "--detach", "--platform", "cuda", "--workspace", str(tmp_path),
                 "--gpus", *gpus]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return json.loads((d / "run.json").read_text())["env_delta"]


def test_run_takes_a_count_or_device_ids(tmp_path, capsys, monkeypatch):
    by_count = _launched_env(tmp_path, capsys, monkeypatch, "2")
    assert by_count["NPROC_PER_NODE"] == "2" and "CUDA_VISIBLE_DEVICES" not in by_count  # the visible ones
    by_ids = _launched_env(tmp_path, capsys, monkeypatch, "0,1")
    assert (by_ids["NPROC_PER_NODE"], by_ids["CUDA_VISIBLE_DEVICES"]) == ("2", "0,1")
    one = _launched_env(tmp_path, capsys, monkeypatch, "3,")
    assert (one["NPROC_PER_NODE"], one["CUDA_VISIBLE_DEVICES"]) == ("1", "3")
    assert re.fullmatch(r"[0-9a-f]{32}", by_count["HIPWIZARD_RUN"])
