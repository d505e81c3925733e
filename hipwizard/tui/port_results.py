"""The Write results list: one row per file, one per compile error (selecting an error opens its hunk)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets.option_list import Option


def result_options(report) -> list[Option]:
    """Rows for an ``ApplyReport``; an error row's id is ``"err|<hunk id>"`` when it maps to a hunk."""
    rows: list[Option] = []
    for n, f in enumerate(report.files):
        line = f"{f.symbol} {f.path} — {f.status}" + (f", compile {f.check}" if f.check else "")
        rows.append(Option(Text(line + (f": {f.detail}" if f.detail else "")), id=f"file{n}|"))
        for k, e in enumerate(f.errors):
            where = "→ open its hunk (Enter)" if e.hunk_id else "(outside the reviewed hunks)"
            text = Text(f"    ✖ L{e.line}: {e.message}  {where}")
            rows.append(Option(text, id=f"err{n}.{k}|{e.hunk_id}" if e.hunk_id else None))
    if report.check_note:
        rows.append(Option(Text(f"ℹ {report.check_note}"), disabled=True))
    return rows
