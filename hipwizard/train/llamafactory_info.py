"""Facts about the installed LLaMA-Factory and DeepSpeed, read without importing them (no torch in the UI).

- ``installed_templates()``: template names registered in the installed ``llamafactory/data/template.py``,
  read by parsing its source (``register_template(name=...)``); no copy of the list is kept here.
- ``deepspeed_installed()``: whether ``import deepspeed`` would find a package.
- ``dataset_names(dataset_dir)``: the keys of ``dataset_info.json``, or why they cannot be read.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


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


def deepspeed_installed() -> bool:
    return _package_dir("deepspeed") is not None


def dataset_names(dataset_dir: Path) -> NameList:
    """Dataset names declared in ``dataset_dir/dataset_info.json``."""
    info = dataset_dir / "dataset_info.json"
    try:
        data = json.loads(info.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return NameList(None, f"{info} not found")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return NameList(None, f"{info} is unreadable: {exc}")
    if not isinstance(data, dict):
        return NameList(None, f"{info} does not hold a JSON object")
    return NameList(frozenset(data))
