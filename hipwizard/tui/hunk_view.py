"""The hunk on the right of the Port screen: a coloured unified diff with line numbers, its decision in
words and symbols, its risk flags and any compile errors blamed on it."""

from __future__ import annotations

from functools import lru_cache

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text

from hipwizard.port.model import Hunk

DECISION_LABEL = {
    "pending": "○ pending",
    "accepted": "✔ accepted",
    "rejected": "✖ rejected",
    "edited": "✎ edited (your text is applied)",
}
SEVERITY_LABEL = {"high": "✖ high", "med": "⚠ med", "low": "ℹ low"}
SEVERITY_STYLE = {"high": "bold red", "med": "bold yellow", "low": "bold cyan"}


@lru_cache(maxsize=1)
def _highlighter() -> Syntax:
    # One Syntax object reused: building the pygments lexer is the slow part.
    return Syntax("", "cuda", theme="monokai", background_color="default")


def _highlight(lines: list[str]) -> list[Text]:
    if not lines:
        return []
    code = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    text = _highlighter().highlight(code)
    text.rstrip()
    return text.split("\n", allow_blank=True)[: len(lines)]


def _row(mark: str, old_no: int | None, new_no: int | None, body: Text, style: str) -> Text:
    nums = f"{old_no if old_no else '':>5} {new_no if new_no else '':>5} "
    row = Text(nums, style="dim")
    row.append(f"{mark} ", style=style or "dim")
    row.append_text(body)
    if style:
        row.stylize(style, len(nums))
    return row


def render_hunk(hunk: Hunk, decision: str, *, edited: list[str] | None, changed: bool, where: str,
                errors: list[tuple[int | None, str]] = ()) -> Group:
    """What the hunk view shows for ``hunk``: header, diff, flags, compile errors."""
    header = Text()
    header.append(f"{hunk.file}", style="bold")
    header.append(f"   {where}   ")
    header.append(DECISION_LABEL[decision], style="bold reverse" if decision != "pending" else "bold")
    if changed:
        header.append("   ⟳ changed since the review started", style="bold yellow")
    old_end = hunk.old_start + max(len(hunk.old_lines) - 1, 0)
    new_end = hunk.new_start + max(len(hunk.new_lines) - 1, 0)
    span = Text(f"original L{hunk.old_start}-{old_end}  →  translated L{hunk.new_start}-{new_end}", style="dim")
    rows: list[Text] = []
    first_ctx = hunk.old_start - len(hunk.context_before)
    for k, body in enumerate(_highlight(hunk.context_before)):
        rows.append(_row(" ", first_ctx + k, None, body, ""))
    for k, body in enumerate(_highlight(hunk.old_lines)):
        rows.append(_row("-", hunk.old_start + k, None, body, "on #3b0d0d"))
    new_side = edited if edited is not None else hunk.new_lines
    mark = "✎" if edited is not None else "+"
    for k, body in enumerate(_highlight(new_side)):
        rows.append(_row(mark, None, hunk.new_start + k, body, "on #0d3b12"))
    after_no = hunk.old_start + len(hunk.old_lines)
    for k, body in enumerate(_highlight(hunk.context_after)):
        rows.append(_row(" ", after_no + k, None, body, ""))
    if edited is not None:
        rows.append(Text(f"      ✎ your edit replaces the translation ({len(hunk.new_lines)} lines)", style="italic"))
    parts: list = [header, span, Text(""), *rows]
    if hunk.flags:
        parts.append(Text(""))
        for f in hunk.flags:
            line = Text()
            line.append(f"{SEVERITY_LABEL[f.severity]} {f.rule_id}", style=SEVERITY_STYLE[f.severity])
            line.append(f"  {f.reason}")
            if f.line:
                line.append(f"  (translated L{f.line})", style="dim")
            parts.append(line)
            parts.append(Text(f"    fix: {f.hint}"))
            if f.source:
                parts.append(Text(f"    source: {f.source}", style="dim"))
    else:
        parts.append(Text("\n✔ no risk flags on this hunk", style="dim"))
    for line_no, message in errors:
        parts.append(Text(f"✖ compile error at written L{line_no}: {message}", style="bold red"))
    return Group(*parts)
