"""Facts about the installed LLaMA-Factory and DeepSpeed, read without importing them (no torch in the UI).

- ``installed_templates()``: template names registered in the installed ``llamafactory/data/template.py``,
  read by parsing its source (``register_template(name=...)``); no copy of the list is kept here.
- ``deepspeed_installed()``: whether ``import deepspeed`` would find a package.
- ``dataset_names(dataset_dir)``: the keys of ``dataset_info.json``, or why they cannot be read.
- ``sampler_key()``: the key the installed transformers takes for length-grouped batches (``train_sampling_strategy``
  from 5.2, ``group_by_length`` before), read from its ``training_args.py``.
- ``precision_fixed_early()``: whether its Trainer hands the precision to Accelerate (``fp8``'s trap), from its
  ``trainer.py``. Both sources are read once per file version.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hipwizard.train.config.bounded import read_regular_text


@dataclass(frozen=True)
class NameList:
    """Names read from somewhere, or the reason they could not be read (``names`` is then None)."""
    names: frozenset[str] | None
    reason: str = ""


def _package_dir(name: str) -> Path | None:
    # find_spec of a top-level package locates it without executing its __init__.
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def installed_templates() -> NameList:
    """Template names the installed llamafactory registers."""
    pkg = _package_dir("llamafactory")
    if pkg is None:
        return NameList(None, "llamafactory is not installed, so template names cannot be checked")
    source = pkg / "data" / "template.py"
    try:
        stat = source.stat()
    except OSError:
        return NameList(None, f"{source} not found (unexpected llamafactory layout)")
    return _templates_from(str(source), stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _templates_from(path: str, _mtime: int) -> NameList:
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        return NameList(None, f"cannot read {path}: {exc}")
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "register_template":
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    names.add(kw.value.value)
    if not names:
        return NameList(None, f"no register_template(name=...) calls found in {path}")
    return NameList(frozenset(names))


SAMPLER_KEY_NEW, SAMPLER_KEY_OLD = "train_sampling_strategy", "group_by_length"


def _transformers_source(name: str) -> str | None:
    """The text of the installed transformers' ``name`` (training_args.py, trainer.py), read once per version of
    the file (its mtime and size); None without transformers or when it cannot be read."""
    pkg = _package_dir("transformers")
    try:
        stat = (pkg / name).stat() if pkg is not None else None
    except OSError:
        stat = None
    return None if pkg is None or stat is None else _read_source(str(pkg / name), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _read_source(path: str, _mtime: int, _size: int) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def sampler_key() -> str | None:
    """The YAML key that turns on the HF Trainer's length-grouped sampler with the installed transformers:
    ``train_sampling_strategy`` (value ``group_by_length``; transformers >= 5.2 dropped the boolean) or
    ``group_by_length`` (``true``; older). None without transformers or when its file tells neither."""
    text = _transformers_source("training_args.py")
    return None if text is None else _sampler_key_of(text)


def _sampler_key_of(text: str) -> str | None:
    for key in (SAMPLER_KEY_NEW, SAMPLER_KEY_OLD):  # a field of TrainingArguments: "    name: type = field(...)"
        if re.search(rf"^\s+{key}\s*:", text, re.MULTILINE):
            return key
    return None


def deepspeed_installed() -> bool:
    return _package_dir("deepspeed") is not None


def torchao_installed() -> bool:
    return _package_dir("torchao") is not None


def precision_fixed_early() -> bool | None:
    """Whether the installed transformers hands TrainingArguments' precision to Accelerate (5.x: the Trainer builds
    its Accelerator with ``"mixed_precision": self.args.mixed_precision``, read when the arguments were built, so
    an ACCELERATE_MIXED_PRECISION set later, as LLaMA-Factory's ``fp8`` does in its Trainer, is not seen). None
    without transformers or when its trainer.py cannot be read."""
    text = _transformers_source("trainer.py")
    return None if text is None else bool(
        re.search(r"[\"']mixed_precision[\"']\s*:\s*self\.args\.mixed_precision", text))


# Datasets LLaMA-Factory's examples name that are files in its repository's data/ folder: the pip
# package does not carry them, so they exist only beside a clone of the repository.
REPO_DATASETS = frozenset({
    "alpaca_en_demo", "alpaca_zh_demo", "identity", "glaive_toolcall_en_demo", "glaive_toolcall_zh_demo",
    "mllm_demo", "mllm_audio_demo", "mllm_video_demo", "mllm_video_audio_demo", "dpo_en_demo", "dpo_zh_demo",
    "kto_en_demo", "c4_demo", "wiki_demo",
})
HUB_COPIES = {"alpaca_en_demo": "llamafactory/alpaca_en", "alpaca_zh_demo": "llamafactory/alpaca_zh"}


def repo_dataset_hint(names: list[str]) -> str:
    """Why ``names`` (datasets of LLaMA-Factory's repository) are not found, and the fix; "" for none."""
    ours = [n for n in names if n in REPO_DATASETS]
    if not ours:
        return ""
    hint = (f"{', '.join(ours)} {'is a dataset' if len(ours) == 1 else 'are datasets'} of LLaMA-Factory's "
            f"repository (its data/ folder), not of the pip package: clone it (git clone --depth 1 "
            f"https://github.com/hiyouga/LLaMA-Factory) and set dataset_dir to LLaMA-Factory/data")
    hub = [f"{n} -> {HUB_COPIES[n]}" for n in ours if n in HUB_COPIES]
    if hub:
        hint += f", or use the Hub copy with dataset_dir: ONLINE ({'; '.join(hub)})"
    return hint


def dataset_names(dataset_dir: Path) -> NameList:
    """Dataset names declared in ``dataset_dir/dataset_info.json``."""
    info = dataset_dir / "dataset_info.json"
    try:
        data = json.loads(read_regular_text(info))
    except FileNotFoundError:
        return NameList(None, f"{info} not found")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        return NameList(None, f"{info} is unreadable: {exc}")
    if not isinstance(data, dict):
        return NameList(None, f"{info} does not hold a JSON object")
    return NameList(frozenset(data))
