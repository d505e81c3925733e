"""Forms of pasted GPU tool output that the shared readers (``hipwizard.gpu.parsers``) do not take as they
stand: ``rocm-smi --csv`` tables, and a rocminfo excerpt that starts inside an agent's block (the user cut
the ``Agent N`` header off). Each is brought to a form those readers know, then read by them.
"""

from __future__ import annotations

import csv
import json
import re

from hipwizard.gpu.parsers.models import Parsed, ToolView
from hipwizard.gpu.parsers.rocm_smi import parse_rocm_smi_json
from hipwizard.gpu.parsers.text import strip_ansi

_CSV_HEAD = re.compile(r"^\s*device\s*,", re.IGNORECASE)
_CSV_ROW = re.compile(r"^\s*card(\d+|system)\s*,", re.IGNORECASE)
_AGENT = re.compile(r"^\s*Agent\s+\d+\s*$", re.MULTILINE)
_AGENT_KEYS = (re.compile(r"^\s+Device Type:\s*\S", re.MULTILINE), re.compile(r"^\s+Name:\s*\S", re.MULTILINE))


def is_rocm_smi_csv(text: str) -> bool:
    """``rocm-smi ... --csv``: a ``device,...`` header and ``cardN,...`` (or ``cardsystem,...``) rows."""
    lines = strip_ansi(text or "").splitlines()
    return any(_CSV_HEAD.match(x) for x in lines) and any(_CSV_ROW.match(x) for x in lines)


def parse_rocm_smi_csv(text: str) -> Parsed[ToolView]:
    """One or more ``rocm-smi --csv`` tables -> the ``{"cardN": {column: value}}`` document of ``--json``
    (same column names), read by ``parse_rocm_smi_json``. ``cardsystem`` rows (driver version) list no GPU."""
    cards: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in strip_ansi(text or "").splitlines():
        if _CSV_HEAD.match(line):
            header = [h.strip() for h in next(csv.reader([line.strip()]))]
            continue
        m = _CSV_ROW.match(line)
        if not (header and m) or m.group(1).lower() == "system":
            continue
        row = [c.strip() for c in next(csv.reader([line.strip()]))]
        if len(row) == len(header):
            cards.setdefault(row[0].lower(), {}).update(zip(header[1:], row[1:]))
    if not cards:
        return Parsed(ToolView("rocm-smi"), ["rocm-smi: CSV lists no cardN rows"])
    return parse_rocm_smi_json(json.dumps(cards))


def rocminfo_excerpt(text: str) -> str:
    """A rocminfo excerpt without any ``Agent N`` header but with an agent's keys (Name, Device Type) is one
    agent's block: give it the header the reader needs. Other text is returned as it is."""
    text = text or ""
    if _AGENT.search(strip_ansi(text)) or not all(rx.search(strip_ansi(text)) for rx in _AGENT_KEYS):
        return text
    return "Agent 1\n" + text
