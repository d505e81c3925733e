"""The Write results list: one row per file, one per compile error (selecting an error opens its hunk),
then the risks on unchanged lines still to edit by hand (the write does not change those lines)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets.option_list import Option


def result_options(report, review=None) -> list[Option]:
    """Rows for an ``ApplyReport``; an error row's id is ``"err|<hunk id>"`` when it maps to a hunk.
    With the ``ReviewState`` written, a count of its risks on unchanged lines and one row per file
    with such risks (line numbers in the written file)."""
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
    untouched = {f: risks for f, risks in review.untouched.items() if risks} if review is not None else {}
    if untouched:
        total = sum(len(r) for r in untouched.values())
        rows.append(Option(Text(f"⚑ {total} risks on unchanged lines need a manual edit:"), disabled=True))
        for f, risks in untouched.items():
            lines = ", ".join(f"L{review.written_line(f, r)} {r.flag.rule_id}" for r in risks)
            rows.append(Option(Text(f"    ⚑ {f}: {lines}"), disabled=True))
    return rows
