"""Resume a run from its newest complete checkpoint, through LLaMA-Factory's own resume.

``newest_checkpoint(output_dir)``: the ``checkpoint-N`` folder with the highest N that is complete (its
``trainer_state.json`` parses and names that step, and model weights and the RNG state are there: the
Trainer writes trainer_state.json after the weights and the optimizer, so a checkpoint cut short by a kill
lacks it). ``resume_arguments``: what ``llamafactory-cli train config.yaml`` gets after the YAML (its OmegaConf
overrides), so config.yaml itself is never edited: ``resume_from_checkpoint=<folder>`` and
``overwrite_output_dir=false`` (else LLaMA-Factory deletes trainer_log.jsonl and the loss curve starts over).

Attempts: ``attempts.json`` in the run folder lists each start of the run (the launch, each resume by hand or
automatic), with why and from which checkpoint.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from hipwizard.atomic import atomic_write_json

ATTEMPTS_NAME = "attempts.json"
_CKPT = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin", "model.safetensors", "pytorch_model.bin",
            "model.safetensors.index.json", "pytorch_model.bin.index.json")


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int


def complete(folder: Path, step: int) -> bool:
    try:
        state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(state, dict) or state.get("global_step") != step:
        return False
    has_weights = any((folder / w).is_file() for w in _WEIGHTS) or any(folder.glob("global_step*"))
    has_rng = any(folder.glob("rng_state*.pth")) or any(folder.glob("global_step*"))
    return has_weights and has_rng


def newest_checkpoint(output_dir: str | Path) -> Checkpoint | None:
    found = []
    try:
        entries = list(Path(output_dir).iterdir())
    except OSError:
        return None
    for d in entries:
        m = _CKPT.match(d.name)
        if m and d.is_dir() and not d.is_symlink():
            found.append(Checkpoint(d, int(m.group(1))))
    for ckpt in sorted(found, key=lambda c: c.step, reverse=True):
        if complete(ckpt.path, ckpt.step):
            return ckpt
    return None


def resume_arguments(checkpoint: Checkpoint) -> list[str]:
    return [f"resume_from_checkpoint={checkpoint.path}", "overwrite_output_dir=false"]


@dataclass
class Attempt:
    attempt: int
    started: str
    reason: str  # "launch", "resume", "auto-resume after <cause>"
    checkpoint: str | None = None
    step: int | None = None
    ended: str | None = None
    returncode: int | None = None
    outcome: str | None = None  # finished / failed / stalled / stopped


def read_attempts(run_dir: str | Path) -> list[Attempt]:
    try:
        data = json.loads((Path(run_dir) / ATTEMPTS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for d in data if isinstance(data, list) else []:
        try:
            out.append(Attempt(**{k: v for k, v in d.items() if k in Attempt.__dataclass_fields__}))
        except TypeError:
            continue
    return out


def write_attempts(run_dir: str | Path, attempts: list[Attempt]) -> None:
    atomic_write_json(Path(run_dir) / ATTEMPTS_NAME, [asdict(a) for a in attempts])


def add_attempt(run_dir: str | Path, attempt: Attempt) -> None:
    write_attempts(run_dir, [a for a in read_attempts(run_dir) if a.attempt != attempt.attempt] + [attempt])


def end_attempt(run_dir: str | Path, number: int, **fields) -> None:
    attempts = read_attempts(run_dir)
    for a in attempts:
        if a.attempt == number:
            for k, v in fields.items():
                setattr(a, k, v)
    write_attempts(run_dir, attempts)
