"""Small readers shared by the tool parsers: ANSI escapes, JSON after banners, numbers and sizes with units,
gfx target names, and the ways ROCm tools say that the kernel driver is not usable.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hipwizard.textsafe import inert

# The caret notation ("^[[31m", "^[3m") users paste from terminals; real control sequences go through the
# one sanitiser (hipwizard.textsafe).
_CARET = re.compile(r"\^\[\[?[0-9;]*[A-Za-z]")
_GFX = re.compile(r"\b(gfx[0-9a-f]{3,5})((?::[a-z0-9_-]+[+-]?)*)", re.IGNORECASE)
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?i?B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 2**10, "kib": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30,
          "tb": 2**40, "tib": 2**40}
_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")
# The ways ROCm tools say "the kernel driver is not usable" (rocminfo, rocm-smi, amd-smi; old and new).
_DRIVER_DOWN = re.compile(
    r"ROCk module is NOT (?:loaded|live)|Driver not initialized|amdgpu not found in modules"
    r"|driver not initialized|Unable to detect any GPU devices|Unable to open /dev/kfd|HSA_STATUS_ERROR_OUT_OF_RESOURCES",
    re.IGNORECASE,
)


def strip_ansi(text: str) -> str:
    """``text`` with no control sequence (CSI, OSC, DCS, APC, C1, caret notation) or control character but
    newline, carriage return and tab: tool output and pastes are read as inert text."""
    return inert(_CARET.sub("", text), keep="\n\r\t")


def driver_down_note(text: str) -> str:
    """The first line saying the amdgpu/KFD driver is not usable, or ''."""
    for line in strip_ansi(text).splitlines():
        if _DRIVER_DOWN.search(line):
            return line.strip()
    return ""


def json_document(text: str, openers: str = "[{") -> tuple[Any, str]:
    """The JSON document in a tool's stdout, skipping banner lines (amd-smi's watch header, a pasted prompt).

    Tried from the first ``openers`` character, then from each one that starts a line. Returns
    (document, "") or (None, why the first try failed); (None, "") when there is no opener at all.
    """
    firsts = [i for i in (text.find(ch) for ch in openers) if i >= 0]
    starts = {m.start() + 1 for m in re.finditer("\n[" + re.escape(openers) + "]", text)}
    if firsts:
        starts.add(min(firsts))
    error = ""
    for start in sorted(starts):
        try:
            return json.loads(text[start:]), ""
        except json.JSONDecodeError as exc:
            error = error or f"{exc.msg} at char {exc.pos}"
    return None, error


def find_gfx(text: str) -> tuple[str, str]:
    """(base target, full target with features) of the first gfx name in ``text``, or ("", "")."""
    m = _GFX.search(text or "")
    if not m:
        return "", ""
    return m.group(1).lower(), (m.group(1) + m.group(2)).lower()


def number(value: Any) -> float | None:
    """A number from 42, "42", "42 %", or {"value": 42, "unit": "%"}; None for "N/A" or nothing."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _NUMBER.match(str(value))
    return float(m.group(1)) if m else None


def size_to_bytes(value: Any, default_unit: str = "B") -> int | None:
    """'64289 MB', '192 GiB', {'value': 196592, 'unit': 'MB'}, '206141652992' -> bytes; None if unreadable.

    Tools say MB for MiB (amd-smi, rocm-smi), so MB/GB are read as binary units.
    """
    if isinstance(value, dict):
        return size_to_bytes(f"{value.get('value', '')} {value.get('unit', default_unit)}")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value * _UNITS.get(default_unit.lower(), 1))
    m = _SIZE.match(str(value))
    if not m:
        return None
    unit = (m.group(2) or default_unit).lower()
    return int(float(m.group(1)) * _UNITS.get(unit, 1))
