"""Parser for ``rocminfo``: GPU agents (gfx target, name, VRAM pool, UUID), driver state, KFD version.

Read by structure (agent blocks and keys), never by line numbers. The doctor reads it; telemetry does not
(rocminfo reports no usage), so its ``ToolView`` has no samples.
"""

from __future__ import annotations

import re

from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView
from hipwizard.gpu.parsers.pci_ids import normalize_id
from hipwizard.gpu.parsers.text import driver_down_note, find_gfx, size_to_bytes, strip_ansi

_ROCK_LOADED = re.compile(r"ROCk module(?: version (\S+))? is loaded", re.IGNORECASE)
_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$")
_KV = re.compile(r"^(\s*)([^:]+?):\s*(.*)$")
_EXCERPT = (re.compile(r"^\s+Device Type:\s*(?:GPU|CPU|DSP)\s*$", re.MULTILINE),
            re.compile(r"^\s+(?:Name|Marketing Name|Vendor Name|Uuid):\s*\S", re.MULTILINE))


def is_agent_excerpt(text: str) -> bool:
    """One agent's block pasted without its ``Agent N`` header (the user cut it off): read as agent 1."""
    text = strip_ansi(text or "")
    return not any(_AGENT.match(x) for x in text.splitlines()) and all(rx.search(text) for rx in _EXCERPT)


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

    blocks = _agent_blocks(text.splitlines()) or ([(1, text.splitlines())] if is_agent_excerpt(text) else [])
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
            vram_bytes=_coarse_pool_bytes(lines), device_id=normalize_id(fields.get("chip id", "")),
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
