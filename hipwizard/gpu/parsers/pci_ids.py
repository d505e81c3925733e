"""PCI device ids -> product and gfx target (``assets/pci_ids.yaml``, every row with its source).

Tools that name a GPU only by its id (rocminfo's ``Chip ID: 29857(0x74a1)``, amd-smi's ``DEVICE_ID``,
rocm-smi's ``Device ID`` or a bare ``Card series: 0x74a1``, ``lspci -nn``'s ``[1002:74a1]``) are named
through this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hipwizard.paths import assets_dir

_HEX = re.compile(r"0x([0-9a-f]{4})\b|\b([0-9a-f]{4})\b", re.IGNORECASE)


@dataclass(frozen=True)
class PciDevice:
    device_id: str  # "0x74a1"
    product: str
    gfx: str
    source: str  # URL


def normalize_id(text: str) -> str:
    """'29857(0x74a1)', '0x74A1', '74a1', '[1002:74a1]' -> '0x74a1'; '' when there is no 4-digit hex id."""
    text = str(text or "").strip()
    m = re.search(r"0x([0-9a-f]{4})\b", text, re.IGNORECASE) or re.search(r"1002:([0-9a-f]{4})\b", text, re.IGNORECASE)
    if not m and re.fullmatch(r"[0-9a-f]{4}", text, re.IGNORECASE):
        return "0x" + text.lower()
    return "0x" + m.group(1).lower() if m else ""


@lru_cache(maxsize=1)
def table() -> dict[str, PciDevice]:
    """device id ('0x74a1') -> PciDevice, from the shipped data."""
    import yaml

    data = yaml.safe_load((assets_dir() / "pci_ids.yaml").read_text(encoding="utf-8")) or {}
    sources = {str(k): str(v) for k, v in (data.get("sources") or {}).items()}
    out = {}
    for key, row in (data.get("devices") or {}).items():
        dev_id = normalize_id(str(key))
        out[dev_id] = PciDevice(dev_id, str(row.get("product", "")), str(row.get("gfx", "")),
                                sources.get(str(row.get("source", "")), ""))
    return out


def lookup(device_id: str) -> PciDevice | None:
    """The known device for an id in any of the spellings ``normalize_id`` reads, or None."""
    dev = normalize_id(device_id)
    return table().get(dev) if dev else None
