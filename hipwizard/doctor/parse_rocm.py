"""Parsers for ROCm's classic tools: ``rocminfo``, ``rocm-smi`` (JSON, ``GPU[N]: key: value`` text and the
concise table) and one-line version outputs. Read by structure (agent blocks, keys, table rows), never by
line numbers; each returns ``Parsed`` with what it could not read.
"""

from __future__ import annotations

import json
import re

from hipwizard.doctor.models import GpuInfo, Parsed, ToolView
from hipwizard.doctor.rawtext import find_gfx, first_version, size_to_bytes, strip_ansi

# The ways ROCm tools say "the kernel driver is not usable" (rocminfo, rocm-smi, amd-smi; old and new).
_DRIVER_DOWN = re.compile(
    r"ROCk module is NOT (?:loaded|live)|Driver not initialized|amdgpu not found in modules"
    r"|driver not initialized|Unable to detect any GPU devices|Unable to open /dev/kfd|HSA_STATUS_ERROR_OUT_OF_RESOURCES",
    re.IGNORECASE,
)
_ROCK_LOADED = re.compile(r"ROCk module(?: version (\S+))? is loaded", re.IGNORECASE)
_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$")
_KV = re.compile(r"^(\s*)([^:]+?):\s*(.*)$")


def driver_down_note(text: str) -> str:
    """The first line saying the amdgpu/KFD driver is not usable, or ''."""
    for line in strip_ansi(text).splitlines():
        if _DRIVER_DOWN.search(line):
            return line.strip()
    return ""


def parse_rocminfo(text: str) -> Parsed[ToolView]:
    """``rocminfo`` -> GPUs (agents whose Device Type is GPU), driver state, KFD version."""
    text = strip_ansi(text or "")
    view = ToolView("rocminfo")
    problems: list[str] = []
    note = driver_down_note(text)
    loaded = _ROCK_LOADED.search(text)
    if note:
        view.driver_loaded, view.driver_note = False, note
    elif loaded:
        view.driver_loaded = True
        if loaded.group(1):
            view.versions["kfd"] = loaded.group(1)

    blocks = _agent_blocks(text.splitlines())
    if not blocks:
        if not note:
            problems.append("rocminfo: no 'Agent N' blocks found" if text.strip() else "rocminfo: empty output")
        return Parsed(view, problems)
    for number, lines in blocks:
        fields = _first_values(lines)
        dev_type = fields.get("device type", "").upper()
        name = fields.get("name", "")
        if not dev_type:
            if name.lower().startswith("gfx"):
                dev_type = "GPU"
                problems.append(f"rocminfo: agent {number} has no Device Type (truncated?); taken as a GPU from its name")
            else:
                problems.append(f"rocminfo: agent {number} has no Device Type (truncated?); skipped")
                continue
        if dev_type != "GPU":
            continue
        isa = next((v for k, v in _all_values(lines) if k == "name" and "amdgcn" in v), "")
        base, full = find_gfx(isa or name)
        if not base:
            problems.append(f"rocminfo: agent {number} is a GPU but names no gfx target")
        gpu = GpuInfo(
            index=len(view.gpus), vendor="amd", name=fields.get("marketing name", "") or name,
            gfx=base, gfx_full=full or base, uuid=fields.get("uuid", ""), source="rocminfo",
            vram_bytes=_coarse_pool_bytes(lines),
        )
        view.gpus.append(gpu)
    return Parsed(view, problems)


def _agent_blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    blocks: list[tuple[int, list[str]]] = []
    for line in lines:
        m = _AGENT.match(line)
        if m:
            blocks.append((int(m.group(1)), []))
        elif blocks and not line.strip().startswith("*" * 3):
            blocks[-1][1].append(line)
    return blocks


def _all_values(lines: list[str]):
    for line in lines:
        m = _KV.match(line)
        if m:
            yield m.group(2).strip().lower(), m.group(3).strip()


def _first_values(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in _all_values(lines):
        out.setdefault(key, value)
    return out


def _coarse_pool_bytes(lines: list[str]) -> int | None:
    """The device-local (COARSE GRAINED GLOBAL) pool size: the GPU's VRAM as the runtime sees it."""
    in_coarse = False
    for key, value in _all_values(lines):
        if key == "segment":
            in_coarse = "GLOBAL" in value.upper() and "COARSE" in value.upper()
        elif key == "size" and in_coarse:
            return size_to_bytes(value.split("(")[0].strip(), default_unit="KB")
    return None


def parse_rocm_smi_json(stdout: str, stderr: str = "") -> Parsed[ToolView]:
    """``rocm-smi ... --json``: ``{"card0": {...}, "system": {...}}``; exit 0 with empty stdout = no GPU."""
    view = ToolView("rocm-smi")
    note = driver_down_note((stdout or "") + "\n" + (stderr or ""))
    if note:
        view.driver_loaded, view.driver_note = False, note
    text = strip_ansi(stdout or "").strip()
    if not text:
        return Parsed(view, [] if note else ["rocm-smi: empty output"])
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        return Parsed(view, [f"rocm-smi: output is not JSON ({exc.msg} at char {exc.pos})"])
    if not isinstance(data, dict):
        return Parsed(view, ["rocm-smi: JSON is not an object of cards"])
    problems: list[str] = []
    for key, card in data.items():
        m = re.match(r"card(\d+)$", str(key))
        if not m or not isinstance(card, dict):
            continue
        view.gpus.append(_gpu_from_smi_keys(int(m.group(1)), {str(k).lower(): str(v) for k, v in card.items()}))
    if not view.gpus and not note:
        problems.append("rocm-smi: JSON lists no cardN entries")
    if view.gpus:
        view.driver_loaded = True
    return Parsed(view, problems)


def _gpu_from_smi_keys(index: int, card: dict[str, str]) -> GpuInfo:
    name = (card.get("device name") or card.get("card series") or card.get("card sku") or "").strip()
    base, full = find_gfx(card.get("gfx version", ""))
    return GpuInfo(
        index=index, vendor="amd", name=name, gfx=base, gfx_full=full,
        vram_bytes=size_to_bytes(card.get("vram total memory (b)", "")),
        source="rocm-smi", uuid=card.get("unique id", ""),
    )


_GPU_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.+?):\s*(.*)$")
_CONCISE_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(?:\[?0x[0-9a-f]+)", re.IGNORECASE)
_PARTITION = re.compile(r"\b(NPS\d)\s*,\s*([SDTQC]PX)\b", re.IGNORECASE)


def parse_rocm_smi_text(text: str) -> Parsed[ToolView]:
    """Plain ``rocm-smi`` outputs: ``GPU[N] : key: value`` lines (-i, --showmeminfo ...) and the concise
    table's partition column ("NPS1, QPX, 0"). Partitions each report the full VRAM: never sum them."""
    text = strip_ansi(text or "").replace("\t", " ")
    view = ToolView("rocm-smi")
    note = driver_down_note(text)
    if note:
        view.driver_loaded, view.driver_note = False, note
    cards: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        m = _GPU_LINE.match(line.strip())
        if m:
            cards.setdefault(int(m.group(1)), {})[m.group(2).strip().lower()] = m.group(3).strip()
            continue
        row = _CONCISE_ROW.match(line)
        if row:
            part = _PARTITION.search(line)
            card = cards.setdefault(int(row.group(1)), {})
            if part:
                card["memory partition"], card["compute partition"] = part.group(1).upper(), part.group(2).upper()
    for index in sorted(cards):
        gpu = _gpu_from_smi_keys(index, cards[index])
        gpu.compute_partition = cards[index].get("compute partition", "")
        gpu.memory_partition = cards[index].get("memory partition", "")
        view.gpus.append(gpu)
    if view.gpus:
        view.driver_loaded = True
    problems = [] if view.gpus or note else ["rocm-smi: no GPU[N] lines or table rows found"]
    return Parsed(view, problems)


def parse_version_line(text: str, what: str) -> Parsed[str]:
    """One-line version outputs (``hipconfig --version``, ``/opt/rocm/.info/version``, amdgpu's version)."""
    clean = strip_ansi(text or "").strip()
    version = first_version(clean.splitlines()[0] if clean else "")
    if not version:
        return Parsed("", [f"{what}: no version number in {clean[:60]!r}" if clean else f"{what}: empty output"])
    return Parsed(version)
