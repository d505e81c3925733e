"""Parsers of pasted package listings: ``pip list``, ``pip freeze`` and ``llamafactory-cli env``.

Each gives a ``TorchInfo`` whose ``packages`` use the Python probe's distribution keys (``flash_attn``,
``deepspeed``, ...), so the library checks read them the same way. ``packages_from`` says which listing
answered: a ``pip list`` lists everything installed (a package it lacks is not installed); ``llamafactory-cli
env`` lists the libraries LLaMA-Factory cares about.
"""

from __future__ import annotations

import re

from hipwizard.doctor.models import Parsed, TorchInfo
from hipwizard.doctor.pyprobe import PACKAGES
from hipwizard.gpu.parsers.text import strip_ansi

_FREEZE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==|===)\s*([^\s;#]+)")
_AT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s+@\s+\S+")
_LIST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d[^\s]*)(?:\s+\S.*)?$")


def _key(name: str) -> str:
    """A distribution name as the probe keys it: flash-attn / Flash_Attn -> flash_attn, torch -> torch."""
    norm = name.strip().lower().replace("-", "_").replace(".", "_")
    for dist in PACKAGES:
        if dist.replace("-", "_") == norm:
            return dist
    return norm


def parse_pip(text: str) -> Parsed[TorchInfo]:
    """``pip list`` (two columns under a dashed rule) or ``pip freeze`` (``name==version``) -> packages."""
    info = TorchInfo(source="pip list", packages_from="pip list")
    found: dict[str, str] = {}
    for raw in strip_ansi(text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "Package ", "---", "WARNING", "DEPRECATION", "[notice]")):
            continue
        m = _FREEZE.match(line) or _LIST.match(line)
        if m:
            found[_key(m.group(1))] = m.group(2)
            continue
        at = _AT.match(line)
        if at:
            found.setdefault(_key(at.group(1)), "(local build)")
    if not found:
        return Parsed(info, ["pip: no 'name==version' or 'name version' lines"])
    info.packages = {dist: found.get(dist, "") for dist in PACKAGES}
    info.packages.update({k: v for k, v in found.items() if k not in info.packages})
    info.torch = found.get("torch", "")
    if "+rocm" in info.torch:
        info.hip = info.torch.split("+rocm", 1)[1]
    elif "+cu" in info.torch:
        cu = info.torch.split("+cu", 1)[1]
        info.cuda = f"{cu[:-1]}.{cu[-1]}" if cu.isdigit() and len(cu) >= 3 else cu
    return Parsed(info)


_LF = re.compile(r"^\s*-\s*`?([A-Za-z][A-Za-z0-9 ._-]*?)`?\s+(version|type|number|memory)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_LF_NAMES = {"llamafactory": "llamafactory", "pytorch": "torch", "transformers": "transformers", "datasets": "datasets",
             "accelerate": "accelerate", "peft": "peft", "trl": "trl", "deepspeed": "deepspeed",
             "bitsandbytes": "bitsandbytes", "vllm": "vllm", "python": "python"}


def parse_llamafactory_env(text: str) -> Parsed[TorchInfo]:
    """``llamafactory-cli env`` (``- `llamafactory` version: ...``, ``- PyTorch version: 2.5.1+rocm6.2 (GPU)``,
    ``- GPU type: ...``, ``- GPU number: 8``) -> torch, GPU 0's name and count, library versions."""
    info = TorchInfo(source="llamafactory-cli env", packages_from="llamafactory-cli env")
    values: dict[str, str] = {}
    gpu: dict[str, str] = {}
    for line in strip_ansi(text or "").splitlines():
        m = _LF.match(line)
        if not m:
            continue
        name, kind, value = m.group(1).strip().lower(), m.group(2).lower(), m.group(3)
        if name == "gpu":
            gpu[kind] = value
        elif kind == "version" and name in _LF_NAMES:
            values[_LF_NAMES[name]] = value
    if "llamafactory" not in values and "torch" not in values:
        return Parsed(info, ["llamafactory-cli env: no '- `llamafactory` version' or '- PyTorch version' line"])
    torch = values.pop("torch", "")
    info.torch = torch.split(" ")[0]
    if "+rocm" in info.torch:
        info.hip = info.torch.split("+rocm", 1)[1]
    elif "+cu" in info.torch:
        cu = info.torch.split("+cu", 1)[1]
        info.cuda = f"{cu[:-1]}.{cu[-1]}" if cu.isdigit() and len(cu) >= 3 else cu
    info.python = values.pop("python", "")
    info.packages = {k: v for k, v in values.items()}
    if info.torch:
        info.packages["torch"] = info.torch.split("+")[0]
    if gpu.get("type"):
        info.devices = [{"name": gpu["type"], "gcnArchName": "", "capability": "", "total_memory": 0}]
        count = re.match(r"\d+", gpu.get("number", ""))
        info.device_count = int(count.group(0)) if count else 1
    return Parsed(info)
