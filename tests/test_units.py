"""The one byte formatter: GiB with one decimal from 1 GiB, MiB below, a placeholder for unknown."""

from __future__ import annotations

from hipwizard.units import GIB, MIB, fmt_bytes


def test_fmt_bytes():
    assert fmt_bytes(206141652992) == "192.0 GiB"
    assert fmt_bytes(8 * GIB) == "8.0 GiB"
    assert fmt_bytes(284 * MIB) == "284 MiB"
    assert fmt_bytes(None) == "—" and fmt_bytes(None, "unknown") == "unknown"
