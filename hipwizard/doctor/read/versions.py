"""Version strings as tools and wheels print them: one-line version outputs, major.minor, a wheel's ROCm tag.

The readers of GPU tool outputs (ANSI escapes, sizes with units, gfx names) live with those parsers in
``hipwizard.gpu.parsers.text``.
"""

from __future__ import annotations

import re

from hipwizard.doctor.models import Parsed
from hipwizard.gpu.parsers.text import strip_ansi

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


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


def parse_version_line(text: str, what: str) -> Parsed[str]:
    """One-line version outputs (``hipconfig --version``, ``/opt/rocm/.info/version``, amdgpu's version)."""
    clean = strip_ansi(text or "").strip()
    version = first_version(clean.splitlines()[0] if clean else "")
    if not version:
        return Parsed("", [f"{what}: no version number in {clean[:60]!r}" if clean else f"{what}: empty output"])
    return Parsed(version)


_HIP_LINE = re.compile(r"^\s*HIP version\s*:\s*(\d+\.\d+\S*)", re.IGNORECASE | re.MULTILINE)


def hip_version(text: str, what: str) -> Parsed[str]:
    """``hipconfig --version`` (a bare version) or ``hipconfig`` / ``--full`` (a ``HIP version: X`` line
    anywhere, after whatever the paste put before it)."""
    m = _HIP_LINE.search(strip_ansi(text or ""))
    return Parsed(m.group(1)) if m else parse_version_line(text, what)
