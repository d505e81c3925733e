"""Parsers for the Python side: the probe's JSON, a pasted ``collect_env`` (old flat and new sectioned
layouts) and ``ds_report``'s op table. GPU tools' outputs are parsed in ``hipwizard.gpu.parsers``."""

from __future__ import annotations

import json
import re

from hipwizard.doctor.models import DeepSpeedOps, Parsed, TorchInfo
from hipwizard.gpu.parsers.text import find_gfx, strip_ansi


def parse_pyprobe(stdout: str) -> Parsed[TorchInfo]:
    """The JSON line of ``python -m hipwizard.doctor.pyprobe`` (the last JSON object in stdout wins)."""
    info = TorchInfo(source="python probe")
    line = next((ln for ln in reversed((stdout or "").splitlines()) if ln.strip().startswith("{")), "")
    if not line:
        return Parsed(info, ["python probe: no JSON in its output"])
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return Parsed(info, [f"python probe: JSON unreadable ({exc.msg})"])
    if not isinstance(data, dict):
        return Parsed(info, ["python probe: JSON is not an object"])
    problems: list[str] = []
    for key in ("python", "torch", "hip", "cuda", "torch_error"):
        setattr(info, key, str(data.get(key) or ""))
    try:
        info.device_count = int(data.get("device_count") or 0)
    except (TypeError, ValueError):
        problems.append("python probe: device_count is not a number")
    devices = data.get("devices")
    info.devices = [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []
    packages = data.get("packages")
    info.packages = {str(k): str(v or "") for k, v in packages.items()} if isinstance(packages, dict) else {}
    reqs = data.get("llamafactory_requires")
    info.llamafactory_requires = [str(r) for r in reqs] if isinstance(reqs, list) else []
    return Parsed(info, problems)


_CE_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ./()_-]*?)\s*:\s?(.*)$")


def parse_collect_env(text: str) -> Parsed[TorchInfo]:
    """``python -m torch.utils.collect_env`` (as pasted in an issue) -> TorchInfo (GPU 0 only: that is all
    collect_env prints). Works on the flat layout and the sectioned ``Key : value`` one."""
    info = TorchInfo(source="collect_env")
    values: dict[str, str] = {}
    for line in strip_ansi(text or "").splitlines():
        m = _CE_KEY.match(line)
        if m:
            values.setdefault(m.group(1).strip().lower(), m.group(2).strip())
    if "pytorch version" not in values:
        return Parsed(info, ["collect_env: no 'PyTorch version' line"])
    info.torch = values["pytorch version"]
    info.packages["torch"] = info.torch.split("+")[0]
    hip = values.get("rocm used to build pytorch", "")
    cuda = values.get("cuda used to build pytorch", "")
    info.hip = "" if hip.upper() in ("N/A", "NONE", "") else hip
    info.cuda = "" if cuda.upper() in ("N/A", "NONE", "") else cuda
    info.python = values.get("python version", "").split(" ")[0]
    problems: list[str] = []
    gpu_line = values.get("gpu models and configuration", "")
    available = values.get("is cuda available", "").lower() == "true"
    if gpu_line and gpu_line.lower() != "could not collect":
        base, full = find_gfx(gpu_line)
        name = re.sub(r"\s*\(gfx[^)]*\)\s*$", "", re.sub(r"^GPU \d+:\s*", "", gpu_line)).strip()
        info.devices = [{"name": name, "gcnArchName": full, "capability": "", "total_memory": 0}]
        if not name:
            problems.append("collect_env: the GPU line has an empty device name")
    elif not gpu_line and "gpu models and configuration" not in values:
        problems.append("collect_env: no 'GPU models and configuration' line (truncated?)")
    info.device_count = 1 if available and info.devices else 0
    return Parsed(info, problems)


_DS_OP = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*\.{2,}\s*\[(\w+)\]\s*\.*\s*\[(\w+)\]")
_DS_INFO = re.compile(r"^\s*(torch (?:hip|cuda) version|deepspeed info)\s*\.+\s*(.*)$")


def parse_ds_report(text: str) -> Parsed[DeepSpeedOps]:
    """``ds_report`` -> op -> (installed, compatible), its warnings, torch hip/cuda and DeepSpeed versions."""
    text = strip_ansi(text or "")
    ops = DeepSpeedOps()
    for line in text.splitlines():
        m = _DS_OP.match(line)
        if m and m.group(1) != "ninja":
            ops.ops[m.group(1)] = (m.group(2).upper() in ("YES", "OKAY"), m.group(3).upper() in ("YES", "OKAY"))
            continue
        if "[WARNING]" in line:
            ops.warnings.append(line.replace("[WARNING]", "").strip())
            continue
        info = _DS_INFO.match(line)
        if info:
            value = info.group(2).strip()
            if info.group(1) == "deepspeed info":
                ops.deepspeed = value.split(",")[0].strip()
            elif value.lower() != "none":
                setattr(ops, "torch_hip" if "hip" in info.group(1) else "torch_cuda", value)
    problems = [] if ops.ops else ["ds_report: no op table found"]
    return Parsed(ops, problems)
