"""The Parity screen's kernel table: the user's own kernels, one row each, the verdict first; the highlighted
kernel's first failing case and minimal case below it.

Rows come from the last kernel report saved in the workspace (``parity.saved_kernels``: the CLI's
``hipwizard parity kernels`` and this screen's L key write it). State is a symbol and a word, never colour only.
"""

from __future__ import annotations

from rich.markup import escape as rich_escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from hipwizard import parity
from hipwizard.textsafe import inert_line

SYMBOL = {"pass": "✔ pass", "fail": "✖ FAIL", "original broken": "! original broken", "not run": "· not run"}


def state_of(row: parity.KernelRow) -> str:
    """A row's state in words (with its symbol)."""
    if not row.supported:
        return "✖ no driver"
    if row.status:
        return SYMBOL.get(row.status, row.status)
    if row.original_built is False or row.port_built is False:
        return "✖ " + ("original" if row.original_built is False else "port") + " driver does not build"
    if row.original_built:
        return "✔ drivers build"
    return "○ spec drafted"


def details(row: parity.KernelRow) -> str:
    """The highlighted kernel: buffers, launch, counts, first failure and minimal case (plain text)."""
    lines = [f"{row.kernel}  ({row.file}:{row.line})", f"state: {state_of(row)}",
             f"buffers: {row.buffers or '—'}", f"launch: {row.launch_site or 'no launch site (drafted)'}"]
    if not row.supported:
        lines.append(f"why: {row.why}")
    if row.cases:
        lines.append(f"cases: {row.cases} — " + ", ".join(f"{k} {v}" for k, v in sorted(row.counts.items())))
    if row.first_failure:
        lines.append(f"first failure: {row.first_failure}")
    if row.minimal_case:
        lines.append(f"minimal case: {row.minimal_case}")
    lines += [f"sanitizer: {c}" for c in row.checks]
    lines += [f"note: {n}" for n in row.notes[:4]]
    return "\n".join(inert_line(x) for x in lines)


class KernelPanel(Vertical):
    """The kernel table and the highlighted kernel's details."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: list[parity.KernelRow] = []

    def compose(self) -> ComposeResult:
        yield Static(id="kernels-headline")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="kernels-table")
        yield Static(id="kernels-details")

    def show(self, rows: list[parity.KernelRow]) -> None:
        self.rows = rows
        self.display = bool(rows)
        table = self.query_one("#kernels-table", DataTable)
        table.clear(columns=True)
        for label in ("verdict", "kernel", "file", "cases", "first failure"):
            table.add_column(label, key=label)
        for i, r in enumerate(rows):
            table.add_row(*(rich_escape(inert_line(c)) for c in (
                state_of(r), r.kernel, f"{r.file}:{r.line}", str(r.cases or ""), r.first_failure[:80])), key=str(i))
        failed = sum(1 for r in rows if r.status == "fail" or r.port_built is False)
        self.query_one("#kernels-headline", Static).update(rich_escape(
            f"your kernels: {len(rows)}" + (f" — {failed} failing" if failed else "")))
        if rows:
            first = next((i for i, r in enumerate(rows) if r.status == "fail"), 0)
            table.move_cursor(row=first, animate=False)
            self._details(first)

    def highlighted(self) -> parity.KernelRow | None:
        """The kernel under the table's cursor (None when the table is empty or hidden)."""
        table = self.query_one("#kernels-table", DataTable)
        if not self.display or not self.rows or not 0 <= table.cursor_row < len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def _details(self, i: int) -> None:
        if 0 <= i < len(self.rows):
            self.query_one("#kernels-details", Static).update(rich_escape(details(self.rows[i])))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()  # the module table's handler on the screen is for module rows
        if event.row_key is not None and event.row_key.value is not None:
            self._details(int(event.row_key.value))
