"""Parser for ``lspci`` (plain, ``-nn``, ``-PP``, ``-nnk``): the AMD and NVIDIA GPUs on the PCI bus.

A GPU is a line of class VGA / 3D / Display controller or Processing accelerators from vendor AMD/ATI or
NVIDIA. The product is the last bracketed name (``Aqua Vanjaram [Instinct MI300X]`` -> ``AMD Instinct
MI300X``); with ``-nn`` the ``[1002:74a1]`` id names it through ``pci_ids``. lspci says nothing of drivers
being usable or of VRAM: it only shows what is plugged in.
"""

from __future__ import annotations

import re
from typing import Literal

from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView
from hipwizard.gpu.parsers.pci_ids import lookup, normalize_id
from hipwizard.gpu.parsers.text import strip_ansi

_LINE = re.compile(
    r"^\s*(?:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]/)*(?P<bdf>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\s+"
    r"(?P<cls>VGA compatible controller|3D controller|Display controller|Processing accelerators)"
    r"(?:\s*\[[0-9a-f]{4}\])?:\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
_IDS = re.compile(r"\[(1002|10de):([0-9a-f]{4})\]", re.IGNORECASE)


def parse_lspci(text: str) -> Parsed[ToolView]:
    """``lspci`` text -> the GPUs it lists (vendor, product, PCI id, bus address)."""
    view = ToolView("lspci")
    for line in strip_ansi(text or "").splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        rest = m.group("rest")
        vendor: Literal["amd", "nvidia"]
        if re.search(r"AMD|ATI", rest) and "NVIDIA" not in rest:
            vendor = "amd"
        elif "NVIDIA" in rest:
            vendor = "nvidia"
        else:
            continue
        ids = _IDS.search(rest)
        dev_id = normalize_id(ids.group(0)) if ids and vendor == "amd" else ""
        bare = re.sub(r"\s*\[[0-9a-f]{4}:[0-9a-f]{4}\]|\s*\(rev [0-9a-f]+\)", "", rest, flags=re.IGNORECASE)
        brackets = re.findall(r"\[([^\]]+)\]", bare)
        name = brackets[-1] if brackets and brackets[-1] not in ("AMD/ATI", "AMD") else bare.split(":")[-1].strip()
        known = lookup(dev_id) if dev_id else None
        if known:
            name = known.product
        elif vendor == "amd" and name.lower().startswith("instinct"):
            name = "AMD " + name
        view.gpus.append(GpuInfo(index=len(view.gpus), vendor=vendor, name=name, bdf=m.group("bdf"),
                                 gfx=known.gfx if known else "", device_id=dev_id, source="lspci"))
    problems = [] if view.gpus else ["lspci: no AMD or NVIDIA GPU lines"]
    return Parsed(view, problems)
