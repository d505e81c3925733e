"""Save a plan as a run directory: ``config.yaml`` (+ ``ds_config.json`` when DeepSpeed is on, + the launch
knobs' ``hipwizard_knobs.json`` when one is on: ``config.launch_knobs``).

The launcher starts ``llamafactory-cli train config.yaml`` with the run directory as its working
directory, so the YAML names the DeepSpeed JSON by its bare file name, and relative model / dataset paths
from the source config are made absolute (they were relative to where that config lived). A new run
directory appears whole (built beside it, then renamed); re-saving an unlaunched one replaces each file
atomically. A directory that already holds a launched run is never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ruamel.yaml.comments import CommentedMap

from hipwizard.atomic import atomic_write_json, atomic_write_text
from hipwizard.errors import UserError
from hipwizard.train.config.deepspeed import ZeroSettings, build_deepspeed_config
from hipwizard.train.config.launch_knobs import KNOBS_NAME, knobs_json, read_knobs
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.config.yaml_io import render_yaml

CONFIG_NAME = "config.yaml"
DS_CONFIG_NAME = "ds_config.json"
LAUNCHED_MARKERS = ("run.json", "train.log")  # written by the launcher


@dataclass(frozen=True)
class RunDir:
    path: Path

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_NAME

    @property
    def deepspeed_path(self) -> Path:
        return self.path / DS_CONFIG_NAME


def run_name(config: TrainConfig, now: datetime | None = None) -> str:
    """A readable, sortable, unique-enough name: ``<model>-<method>-<YYYYmmdd-HHMMSS>``."""
    stem = Path(config.model_name_or_path.rstrip("/")).name or "model"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-").lower()[:40] or "model"
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{stem}-{config.finetuning_type}-{stamp}"


def anchored(config: TrainConfig, base_dir: Path) -> TrainConfig:
    """``config`` with relative model / dataset paths that exist under ``base_dir`` made absolute."""
    updates = {}
    for name in ("model_name_or_path", "dataset_dir"):
        value = getattr(config, name)
        if value and not Path(value).expanduser().is_absolute() and (base_dir / value).exists():
            updates[name] = str((base_dir / value).resolve())
    if not updates:
        return config
    out = config.model_copy(update=updates)
    out.model_fields_set.update(updates)  # model_copy(update=) does not mark them as set
    return out


def save_run_dir(run_dir: str | Path, config: TrainConfig, document: CommentedMap | None = None,
                 *, base_dir: Path | None = None) -> RunDir:
    """Write the run directory for ``config``; returns it. Raises ``UserError`` on a launched run dir."""
    target = RunDir(Path(run_dir).expanduser().resolve())
    if target.path.exists() and not target.path.is_dir():
        raise UserError(f"{target.path} exists and is not a directory")
    for marker in LAUNCHED_MARKERS:
        if (target.path / marker).exists():
            raise UserError(f"{target.path} already holds a launched run ({marker}); save under a new name")
    if base_dir is not None:
        config = anchored(config, base_dir)
    ds_json = None
    if config.zero_stage is not None:
        try:
            ds_json = build_deepspeed_config(ZeroSettings(config.zero_stage, config.offload_optimizer, config.offload_param))
        except ValueError as exc:
            raise UserError(f"cannot write the DeepSpeed config: {exc}") from None
    yaml_text = render_yaml(config, document, deepspeed_path=DS_CONFIG_NAME if ds_json else None)
    knobs = knobs_json(config)
    try:
        if target.path.is_dir():
            _write_files(target.path, yaml_text, ds_json, knobs)
            if ds_json is None and target.deepspeed_path.exists():
                target.deepspeed_path.unlink()  # stale: this plan no longer uses DeepSpeed
            if knobs is None and read_knobs(target.path):
                (target.path / KNOBS_NAME).unlink()  # stale, and ours (read_knobs reads only what hipwizard wrote)
        else:
            _create_whole(target.path, yaml_text, ds_json, knobs)
    except OSError as exc:
        raise UserError(f"cannot write {target.path}: {exc.strerror or exc}") from None
    return target


def _write_files(folder: Path, yaml_text: str, ds_json: dict | None, knobs: dict | None = None) -> None:
    # The JSON first: config.yaml refers to it, so a crash between the two never leaves a dangling name.
    if ds_json is not None:
        atomic_write_json(folder / DS_CONFIG_NAME, ds_json)
    if knobs is not None:
        atomic_write_json(folder / KNOBS_NAME, knobs)
    atomic_write_text(folder / CONFIG_NAME, yaml_text)


def _create_whole(path: Path, yaml_text: str, ds_json: dict | None, knobs: dict | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        _write_files(tmp, yaml_text, ds_json, knobs)
        os.chmod(tmp, 0o755)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_deepspeed(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / DS_CONFIG_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
