"""Parsers for the text GPU tools print: amd-smi JSON, rocm-smi JSON/text, nvidia-smi CSV, sysfs.

Each takes the tool's stdout and returns a list of ``GpuSample`` (empty when the tool said nothing
useful — rocm-smi exits 0 with empty stdout when no GPU is there). Shapes vary across versions
(amd-smi prints a list, ``{"gpu_data": [...]}``, or leaves as ``{"value", "unit"}``), so parsers
accept all of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hipwizard.gpu.sample import MIB, GpuProcess, GpuSample

_UNIT = {"B": 1, "KB": 1024, "KIB": 1024, "MB": MIB, "MIB": MIB, "GB": 1024 * MIB, "GIB": 1024 * MIB}


def _json_payload(text: str) -> Any:
    """The JSON document in a tool's stdout, skipping banner lines such as amd-smi's watch header."""
    for i, ch in enumerate(text):
        if ch in "[{":
            try:
                return json.loads(text[i:])
            except ValueError:
                continue
    return None


def _number(value: Any) -> float | None:
    """A number from 42, "42", "42 %", or {"value": 42, "unit": "%"}; None for "N/A"."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(value))
    return float(m.group(1)) if m else None


def _bytes(value: Any, default_unit: str = "B") -> int | None:
    """Bytes from a leaf with a unit ({"value": 196288, "unit": "MB"}) or a bare number in default_unit."""
    unit = default_unit
    if isinstance(value, dict):
        unit = str(value.get("unit") or default_unit)
    elif isinstance(value, str):
        m = re.match(r"\s*[-\d.]+\s*([A-Za-z]+)", value)
        if m:
            unit = m.group(1)
    n = _number(value)
    if n is None:
        return None
    return int(n * _UNIT.get(unit.upper(), 1))


def _gpu_list(payload: Any) -> list[dict]:
    if isinstance(payload, dict) and isinstance(payload.get("gpu_data"), list):
        payload = payload["gpu_data"]
    if isinstance(payload, dict):
        payload = [payload]
    if not isinstance(payload, list):
        return []
    return [g for g in payload if isinstance(g, dict)]


def parse_amd_smi_metric(text: str) -> list[GpuSample]:
    """``amd-smi metric --usage --mem-usage --json`` (any amd-smi version) -> samples."""
    out = []
    for pos, gpu in enumerate(_gpu_list(_json_payload(text))):
        usage = gpu.get("usage") if isinstance(gpu.get("usage"), dict) else {}
        mem = gpu.get("mem_usage") if isinstance(gpu.get("mem_usage"), dict) else {}
        index = int(_number(gpu.get("gpu")) if _number(gpu.get("gpu")) is not None else pos)
        out.append(GpuSample(
            index=index,
            name=str(gpu.get("name") or ""),
            vram_used=_bytes(mem.get("used_vram"), "MB"),
            vram_total=_bytes(mem.get("total_vram"), "MB"),
            util_pct=_number(usage.get("gfx_activity")),
        ))
    return out


def parse_amd_smi_processes(text: str) -> dict[int, tuple[GpuProcess, ...]]:
    """``amd-smi process --json`` -> processes per GPU index, with VRAM when reported."""
    result: dict[int, tuple[GpuProcess, ...]] = {}
    for pos, gpu in enumerate(_gpu_list(_json_payload(text))):
        index = int(_number(gpu.get("gpu")) if _number(gpu.get("gpu")) is not None else pos)
        procs = []
        for entry in gpu.get("process_list") or []:
            info = entry.get("process_info", entry) if isinstance(entry, dict) else None
            if not isinstance(info, dict) or _number(info.get("pid")) is None:
                continue
            mem = info.get("memory_usage")
            vram = _bytes(mem.get("vram_mem")) if isinstance(mem, dict) else _bytes(info.get("mem_usage"))
            procs.append(GpuProcess(int(_number(info["pid"])), str(info.get("name") or ""), vram))
        result[index] = tuple(procs)
    return result


def parse_rocm_smi_json(text: str) -> list[GpuSample]:
    """``rocm-smi --showproductname --showuse --showmeminfo vram --json`` -> samples (cardN keys)."""
    payload = _json_payload(text)
    if not isinstance(payload, dict):
        return []
    out = []
    for key, card in payload.items():
        m = re.fullmatch(r"card(\d+)", key)
        if not m or not isinstance(card, dict):
            continue
        name = card.get("Card Series") or card.get("Card series") or card.get("Device Name") or ""
        out.append(GpuSample(
            index=int(m.group(1)),
            name=str(name),
            vram_used=_bytes(card.get("VRAM Total Used Memory (B)")),
            vram_total=_bytes(card.get("VRAM Total Memory (B)")),
            util_pct=_number(card.get("GPU use (%)")),
        ))
    return sorted(out, key=lambda s: s.index)


_ROCM_TEXT = re.compile(r"GPU\[(\d+)\]\s*:\s*(VRAM Total Memory \(B\)|VRAM Total Used Memory \(B\)|GPU use \(%\)|"
                        r"Device Name|Card [Ss]eries)\s*:\s*(.+?)\s*$")


def parse_rocm_smi_text(text: str) -> list[GpuSample]:
    """Plain-text ``rocm-smi --showmeminfo vram --showuse`` (``GPU[0] : VRAM Total Memory (B): ...``)."""
    fields: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        m = _ROCM_TEXT.search(line)
        if m:
            fields.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    return [
        GpuSample(
            index=i,
            name=f.get("Device Name") or f.get("Card Series") or f.get("Card series") or "",
            vram_used=_bytes(f.get("VRAM Total Used Memory (B)")),
            vram_total=_bytes(f.get("VRAM Total Memory (B)")),
            util_pct=_number(f.get("GPU use (%)")),
        )
        for i, f in sorted(fields.items())
    ]


NVIDIA_QUERY = "index,uuid,name,memory.used,memory.total,utilization.gpu"
NVIDIA_APPS_QUERY = "gpu_uuid,pid,process_name,used_memory"


def parse_nvidia_smi_csv(text: str, apps_text: str = "") -> list[GpuSample]:
    """``nvidia-smi --query-gpu=NVIDIA_QUERY --format=csv,noheader,nounits`` (MiB) -> samples.

    ``apps_text`` is ``--query-compute-apps=NVIDIA_APPS_QUERY`` output, joined on the GPU uuid.
    """
    procs: dict[str, list[GpuProcess]] = {}
    for line in apps_text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[1].isdigit():
            used = _number(parts[3])
            procs.setdefault(parts[0], []).append(
                GpuProcess(int(parts[1]), parts[2], int(used * MIB) if used is not None else None))
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6 or not parts[0].isdigit():
            continue
        used, total = _number(parts[3]), _number(parts[4])
        out.append(GpuSample(
            index=int(parts[0]),
            name=parts[2],
            vram_used=int(used * MIB) if used is not None else None,
            vram_total=int(total * MIB) if total is not None else None,
            util_pct=_number(parts[5]),
            processes=tuple(procs.get(parts[1], ())),
        ))
    return out
