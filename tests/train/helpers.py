"""Shared helpers for the run tests: real run directories and real (small) programs to launch."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import yaml


def launchable_values(folder: Path) -> dict:
    """A config the pre-launch check accepts (a model folder with config.json, a dataset the folder's
    dataset_info.json names, an installed template), its files made under ``folder``."""
    import json

    model, data = folder / "_model", folder / "_data"
    model.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (data / "dataset_info.json").write_text(json.dumps({"tiny": {"file_name": "tiny.json"}}))
    return {"model_name_or_path": str(model), "dataset": "tiny", "dataset_dir": str(data), "template": "llama3",
            "output_dir": "output"}


def run_dir_with(tmp_path: Path, config: dict | None = None, name: str = "run") -> Path:
    """A run directory; ``config`` None: a launchable one (``launchable_values``) with fake model files."""
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.yaml").write_text(yaml.safe_dump(config or launchable_values(tmp_path)))
    return d


def script(tmp_path: Path, body: str, name: str = "fake-llamafactory-cli") -> str:
    """An executable shell script launched in place of llamafactory-cli (a real process tree)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def wait_for(predicate, timeout: float = 60.0, poll: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s")


def pids_alive(pids) -> list[int]:
    import psutil

    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            pass
    return out


LF_ENV = {"DISABLE_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1"}
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
