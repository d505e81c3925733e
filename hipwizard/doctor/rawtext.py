"""Small readers shared by the parsers: ANSI escapes, sizes with units, gfx target names, versions."""

from __future__ import annotations

import re
from typing import Any

# Real ESC sequences and the caret notation ("^[[31m", "^[3m") users paste from terminals.
_ANSI = re.compile(r"(?:\x1b|\^\[)\[?[0-9;]*[A-Za-z]")
_GFX = re.compile(r"\b(gfx[0-9a-f]{3,5})((?::[a-z0-9_-]+[+-]?)*)", re.IGNORECASE)
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?i?B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 2**10, "kib": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30,
          "tb": 2**40, "tib": 2**40}
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def find_gfx(text: str) -> tuple[str, str]:
    """(base target, full target with features) of the first gfx name in ``text``, or ("", "")."""
    m = _GFX.search(text or "")
    if not m:
        return "", ""
    return m.group(1).lower(), (m.group(1) + m.group(2)).lower()


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


def major_minor(version: str) -> tuple[int, int] | None:
    """(6, 2) from '6.2.41133-dd7f95766', 'rocm6.2', '2.5.1+rocm6.2' (first x.y found); None if none."""
    m = _VERSION.search(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def first_version(text: str) -> str:
    """The first 'x.y[.z...]' token in ``text`` (for one-line version outputs), or ''."""
    m = re.search(r"\d+\.\d+(?:\.\d+)*(?:[-+~][0-9A-Za-z.+-]*)?", text or "")
    return m.group(0) if m else ""


def torch_rocm_tag(torch_version: str) -> tuple[int, int] | None:
    """The ROCm of a wheel's local tag: '2.5.1+rocm6.2' -> (6, 2); None when there is no rocm tag."""
    m = re.search(r"rocm(\d+)\.(\d+)", torch_version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    gib = n / 2**30
    return f"{gib:.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"
