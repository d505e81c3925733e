"""Byte sizes for people: the one formatter every face uses (doctor checks, run view, CLI)."""

from __future__ import annotations

MIB = 2**20
GIB = 2**30


def fmt_bytes(n: int | None, unknown: str = "—") -> str:
    """Bytes -> '192.0 GiB' from 1 GiB up, '284 MiB' below; ``unknown`` when ``n`` is None.

    One decimal of GiB keeps a growing VRAM use visible in telemetry; MiB keeps small uses readable.
    """
    if n is None:
        return unknown
    if n >= GIB:
        return f"{n / GIB:.1f} GiB"
    return f"{n / MIB:.0f} MiB"
