"""Parser for ``rocm-smi``: its JSON (``--json``), ``GPU[N] : key: value`` text, ``--csv`` tables and the
concise table.

One reader per output form, both keyed by rocm-smi's own field names, filling ``ToolView.gpus`` (name, gfx,
total VRAM, partition mode: the doctor) and ``ToolView.samples`` (VRAM used/total, ``GPU use (%)``:
telemetry). Exit 0 with empty stdout means "no GPU" (the reason is on stderr), not an error.
"""

from __future__ import annotations

import csv
import re

from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView
from hipwizard.gpu.parsers.pci_ids import normalize_id
from hipwizard.gpu.parsers.text import driver_down_note, find_gfx, json_document, number, size_to_bytes, strip_ansi
from hipwizard.gpu.sample import GpuSample

_CARD_KEY = re.compile(r"card(\d+)$")
_GPU_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.+?):\s*(.*)$")
_CONCISE_ROW = re.compile(r"^\s*(\d+)\s+(?:\d+\s+)?\[?(0x[0-9a-f]+)", re.IGNORECASE)
_PARTITION = re.compile(r"\b(NPS\d)\s*,\s*([SDTQC]PX)\b", re.IGNORECASE)
_CSV_HEAD = re.compile(r"^\s*device\s*,", re.IGNORECASE)
_CSV_ROW = re.compile(r"^\s*card(\d+|system)\s*,", re.IGNORECASE)


def is_csv(text: str) -> bool:
    """``rocm-smi ... --csv``: a ``device,...`` header and ``cardN,...`` (or ``cardsystem,...``) rows."""
    lines = strip_ansi(text or "").splitlines()
    return any(_CSV_HEAD.match(x) for x in lines) and any(_CSV_ROW.match(x) for x in lines)


def parse_rocm_smi_json(stdout: str, stderr: str = "") -> Parsed[ToolView]:
    """``rocm-smi ... --json``: ``{"card0": {...}, "system": {...}}`` with string values -> GPUs and samples."""
    view = ToolView("rocm-smi")
    note = driver_down_note((stdout or "") + "\n" + (stderr or ""))
    if note:
        view.driver_loaded, view.driver_note = False, note
    text = strip_ansi(stdout or "").strip()
    if not text:
        return Parsed(view, [] if note else ["rocm-smi: empty output"])
    data, error = json_document(text, openers="{")
    if error:
        return Parsed(view, [f"rocm-smi: output is not JSON ({error})"])
    if not isinstance(data, dict):
        return Parsed(view, ["rocm-smi: JSON is not an object of cards"])
    cards: dict[int, dict[str, str]] = {}
    for key, card in data.items():
        m = _CARD_KEY.match(str(key))
        if m and isinstance(card, dict):
            cards[int(m.group(1))] = {str(k).lower(): str(v) for k, v in card.items()}
    for index in sorted(cards):
        _add_card(view, index, cards[index])
    problems = []
    if not view.gpus and not note:
        problems.append("rocm-smi: JSON lists no cardN entries")
    if view.gpus:
        view.driver_loaded = True
    return Parsed(view, problems)


def parse_rocm_smi_text(text: str) -> Parsed[ToolView]:
    """Plain ``rocm-smi`` outputs: ``GPU[N] : key: value`` lines (-i, --showmeminfo, --showuse ...), ``--csv``
    tables (``device,<columns>`` then ``cardN,<values>``) and the concise table's partition column ("NPS1, QPX, 0"). Partitions each report the full VRAM: never sum them."""
    text = strip_ansi(text or "").replace("\t", " ")
    view = ToolView("rocm-smi")
    note = driver_down_note(text)
    if note:
        view.driver_loaded, view.driver_note = False, note
    cards: dict[int, dict[str, str]] = {}
    header: list[str] = []  # the columns of the --csv table being read
    for line in text.splitlines():
        if _CSV_HEAD.match(line):
            header = [h.strip().lower() for h in next(csv.reader([line.strip()]))]
            continue
        if header and (csv_row := _CSV_ROW.match(line)):  # a cardsystem row (driver version) lists no GPU
            row = [c.strip() for c in next(csv.reader([line.strip()]))]
            if csv_row.group(1).isdigit() and len(row) == len(header):
                cards.setdefault(int(csv_row.group(1)), {}).update(zip(header[1:], row[1:], strict=False))
            continue
        m = _GPU_LINE.match(line.strip())
        if m:
            cards.setdefault(int(m.group(1)), {})[m.group(2).strip().lower()] = m.group(3).strip()
            continue
        concise = _CONCISE_ROW.match(line)
        if concise:
            part = _PARTITION.search(line)
            card = cards.setdefault(int(concise.group(1)), {})
            card.setdefault("device id", concise.group(2))
            if part:
                card["memory partition"], card["compute partition"] = part.group(1).upper(), part.group(2).upper()
    for index in sorted(cards):
        gpu = _add_card(view, index, cards[index])
        gpu.compute_partition = cards[index].get("compute partition", "")
        gpu.memory_partition = cards[index].get("memory partition", "")
    if view.gpus:
        view.driver_loaded = True
    problems = [] if view.gpus or note else [
        "rocm-smi: CSV lists no cardN rows" if header else "rocm-smi: no GPU[N] lines or table rows found"]
    return Parsed(view, problems)


def _add_card(view: ToolView, index: int, card: dict[str, str]) -> GpuInfo:
    """One card's fields (lower-case rocm-smi keys) -> a GpuInfo and its GpuSample, appended to ``view``."""
    name = (card.get("device name") or card.get("card series") or card.get("card sku") or "").strip()
    device_id = normalize_id(card.get("device id", "")) or normalize_id(name if re.fullmatch(r"0x[0-9a-f]+", name, re.I) else "")
    if re.fullmatch(r"0x[0-9a-f]+", name, re.IGNORECASE):  # old rocm-smi: "Card series: 0x738c"
        name = ""
    base, full = find_gfx(card.get("gfx version", ""))
    gpu = GpuInfo(
        index=index, vendor="amd", name=name, gfx=base, gfx_full=full,
        vram_bytes=size_to_bytes(card.get("vram total memory (b)", "")),
        source="rocm-smi", uuid=card.get("unique id", ""), device_id=device_id,
    )
    view.gpus.append(gpu)
    view.samples.append(GpuSample(
        index=index, name=name, vram_used=size_to_bytes(card.get("vram total used memory (b)", "")),
        vram_total=gpu.vram_bytes, util_pct=number(card.get("gpu use (%)")),
    ))
    return gpu
