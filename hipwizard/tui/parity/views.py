"""Text renderings for the Parity dashboard: the table's columns, module details, error histogram,
loss-curve overlay.

Pure functions from report objects to strings; the screen and its widgets only place them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len

from hipwizard.parity import BackendRow, Comparison, CurveGap, LayerResult, keep_every_element, matrix_lines
from hipwizard.textsafe import markup as escape  # text from outside: inert, markup shown as text

BAR = "█"


def side_line(label: str, side: dict) -> str:
    """One side of a comparison, most telling first (a narrow window cuts the end): dtype and device,
    versions, then the file."""
    where = side.get("device_name") or side.get("device", "?")
    versions = [f"torch {escape(str(side['torch']))}"] if side.get("torch") else []
    if side.get("hip"):
        versions.append(f"HIP {escape(str(side['hip']))}")
    if side.get("cuda"):
        versions.append(f"CUDA {escape(str(side['cuda']))}")
    parts = [f"{escape(str(side.get('dtype', '?')))} on {escape(str(where))}", ", ".join(versions), escape(str(side.get("file", "?")))]
    return f"[b]{label}[/b] " + " · ".join(p for p in parts if p)


def headline(comp: Comparison) -> str:
    return f"[b]{escape(comp.headline())}[/b]"


def sides(comp: Comparison) -> str:
    return side_line("reference", comp.reference) + "\n" + side_line("candidate", comp.candidate)


@dataclass(frozen=True)
class Column:
    """A column of the module table: its key, header and cell text."""

    key: str
    label: str
    cell: Callable[[LayerResult, Comparison], str]


def _metric(attr: str, spec: str) -> Callable[[LayerResult, Comparison], str]:
    def cell(layer: LayerResult, _comp: Comparison) -> str:
        return fmt(getattr(layer.metrics, attr), spec) if layer.metrics else "—"
    return cell


def verdict_cell(layer: LayerResult, comp: Comparison) -> str:
    """Symbol and word (never colour alone); ◀ marks where divergence starts."""
    return layer.label + (" ◀" if layer.name == comp.first_divergent else "")


def triangle_cell(layer: LayerResult, _comp: Comparison) -> str:
    """The reference-relative verdict: its ratio (port error / the reference's own run-dtype error)."""
    t = layer.triangle
    return "—" if t is None else f"{'✔' if t.passed else '✖'} {fmt(t.ratio, '.2f')}×"


# Display order: the verdict and the module first, always shown.
COLUMNS: tuple[Column, ...] = (
    Column("verdict", "verdict", verdict_cell),
    Column("module", "module", lambda layer, _c: layer.name),
    Column("cosine", "cosine", _metric("cosine", ".6f")),
    Column("max_abs", "max abs", _metric("max_abs", ".3g")),
    Column("rel_l2", "rel L2", _metric("rel_l2", ".3g")),
    Column("triangle", "triangle", triangle_cell),
    Column("outside", "outside", lambda layer, _c: share(layer.metrics.outside_share) if layer.metrics else "—"),
    Column("shape", "shape", lambda layer, _c: "×".join(map(str, layer.shape))),
    Column("order", "#", lambda layer, _c: str(layer.order)),
)
# What a narrow table drops first (the details pane shows all of it for the highlighted module).
DROP_ORDER = ("order", "shape", "outside", "max_abs", "cosine", "triangle", "rel_l2")
CELL_PADDING = 1  # DataTable's default, on each side of a cell


def fit_columns(comp: Comparison | None, width: int) -> list[Column]:
    """The columns that fit in ``width`` cells, dropping by ``DROP_ORDER``; verdict and module always stay
    (the table scrolls sideways when even they do not fit)."""
    def need(col: Column) -> int:
        cells = [col.cell(layer, comp) for layer in comp.layers] if comp is not None else []
        return max([cell_len(col.label), *map(cell_len, cells)]) + 2 * CELL_PADDING

    kept = [c for c in COLUMNS if c.key != "triangle" or (comp is not None and comp.triangle_k is not None)]
    total = sum(need(c) for c in kept)
    for key in DROP_ORDER:
        if total <= width:
            break
        col = next((c for c in kept if c.key == key), None)
        if col is None:
            continue
        kept.remove(col)
        total -= need(col)
    return kept


def share(value: float | None) -> str:
    """A share as a percentage; '—' when not known (a sketched row)."""
    return "—" if value is None else f"{value:.2%}"


def fmt(value: float | None, spec: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return format(value, spec)


def depth_series(comp: Comparison) -> list[float]:
    """log10(rel L2) by execution order (backward order for gradients), shifted so 1e-12 is 0 (higher = worse); non-finite -> top."""
    out = []
    for layer in comp.layers:
        m = layer.metrics
        if m is None:
            continue
        err = m.rel_l2
        if not math.isfinite(err):
            out.append(14.0)
        else:
            out.append(max(0.0, math.log10(max(err, 1e-12)) + 12))
    return out


def details(layer: LayerResult, comp: Comparison) -> str:
    """Everything about one module: verdict and why, tolerance used, histogram, worst elements."""
    tol = comp.tolerance
    lines = [f"[b]{escape(layer.name)}[/b]  {layer.label}  shape {'×'.join(map(str, layer.shape)) or '—'}"]
    if layer.name == comp.first_divergent:
        lines.append("◀ divergence starts here (error jumps here first)")
    if layer.detail:
        lines.append(escape(layer.detail))
    lines += [
        "",
        f"[b]tolerance[/b] {escape(str(tol.get('name')))}: cosine ≥ {tol['cosine_min']:g}, rel L2 ≤ {tol['rel_l2_max']:g}, "
        f"≤ {tol['outside_max']:.2%} outside |Δ| ≤ {tol['atol']:g} + {tol['rtol']:g}·|ref|",
        f"[dim]{escape(str(tol.get('why', '')))}[/dim]",
    ]
    m = layer.metrics
    if m is None:
        return "\n".join(lines)
    t = layer.triangle
    if t is not None:
        lines += ["", f"[b]triangle[/b] {t.label}: error vs the high-precision reference {fmt(t.port, '.3g')}, the "
                      f"reference's own {escape(str((comp.reference_run or {}).get('dtype', '?')))} error "
                      f"{fmt(t.ref, '.3g')}: ratio {fmt(t.ratio, '.2f')} (pass ≤ {t.k:g})"]
    lines += ["", f"cosine {fmt(m.cosine, '.8f')}   max abs {fmt(m.max_abs, '.3g')}   rel L2 {fmt(m.rel_l2, '.3g')}   "
                  f"outside {share(m.outside_share)}   NaN {m.nan_count}   Inf {m.inf_count}"]
    if m.sketch:
        lines += ["", f"stored as a {escape(m.sketch)}: cosine and rel L2 are estimates of the whole tensor's (~1%); "
                      f"per-element numbers are not kept ({keep_every_element(m.sketch, comp.direction)})"]
        return "\n".join(lines)
    lines += ["", "[b]|Δ| per element, by decade[/b]"] + histogram_lines(m.histogram)
    if m.worst:
        lines += ["", "[b]worst elements[/b]  index → reference / candidate (|Δ|)"]
        for w in m.worst:
            lines.append(f"  {list(w.index)!s:<14} {w.ref: .6g} / {w.cand: .6g}  ({w.abs_err:.3g})")
    return "\n".join(lines)


def histogram_lines(hist: list[tuple[str, int]], width: int = 24) -> list[str]:
    """Non-empty decades as bars (the count is always printed: the bar length is only a hint)."""
    rows = [(label, n) for label, n in hist if n]
    if not rows:
        return ["  (no finite elements)"]
    top = max(n for _l, n in rows)
    return [f"  {label:>7} {BAR * max(1, round(width * n / top)):<{width}} {n}" for label, n in rows]


def curves_plot(gap: CurveGap, width: int = 60, height: int = 8, compact: bool = False) -> str:
    """Both smoothed curves on one character grid: A as '●', B as '○', both on a cell as '◉'.
    ``compact`` puts the step range on the legend's line (one line less, for narrow windows)."""
    steps, a, b = gap.common_steps, gap.smooth_a, gap.smooth_b
    lo, hi = min(a + b), max(a + b)
    span = (hi - lo) or 1.0
    cols = min(width, len(steps))
    grid = [[" "] * cols for _ in range(height)]

    def put(series, mark):
        for c in range(cols):
            i = round(c * (len(steps) - 1) / max(1, cols - 1))
            r = height - 1 - round((series[i] - lo) / span * (height - 1))
            cell = grid[r][c]
            grid[r][c] = mark if cell in (" ", mark) else "◉"

    put(a, "●")
    put(b, "○")
    rows = [f"{hi:>9.4f} ┤" + "".join(grid[0])]
    rows += ["          │" + "".join(row) for row in grid[1:-1]]
    rows.append(f"{lo:>9.4f} ┤" + "".join(grid[-1]))
    legend = f"● A {escape(gap.a.name)}   ○ B {escape(gap.b.name)}   ◉ both   (EMA {gap.smoothing:g}"
    if compact:
        rows.append(f"{legend}, steps {steps[0]} … {steps[-1]})")
    else:
        rows += [f"          step {steps[0]} … {steps[-1]}", legend + ")"]
    rows.append(escape(gap.headline()))
    return "\n".join(rows)


def direction_note(comp: Comparison, shown: Comparison) -> str:
    """Which direction the table shows, and how to switch (when the comparison holds gradients)."""
    if comp.backward is None:
        return ""
    if shown.direction == "backward":
        loss = (shown.candidate.get("backward") or {}).get("loss", "?")
        return (f"[b]backward[/b]: gradients of the {escape(str(loss))} loss, in backward order "
                f"(∂out received, ∂W weights, ∂in handed on) — [b]b[/b] shows the forward")
    return "[b]forward[/b]: module outputs — [b]b[/b] shows the backward (gradients)"


def ran_backends(comp: Comparison | None) -> list[BackendRow]:
    """The attention-matrix rows that ran (hold a comparison), in order; empty without a matrix."""
    return [row for row in (comp.matrix if comp is not None else []) if row.comparison is not None]


def matrix_text(comp: Comparison, shown: int = 0) -> str:
    """One line per attention backend: forward and backward verdicts (symbol and word), or why it did not run;
    ▶ marks the backend whose table is shown (``shown``: its index among those that ran)."""
    if not comp.matrix:
        return ""
    ran = ran_backends(comp)
    current = ran[shown % len(ran)].attn if ran else None
    lines = [("▶" + line[1:]) if row.attn == current else line for row, line in zip(comp.matrix, matrix_lines(comp), strict=True)]
    title = "[b]attention backends[/b]" + (f" — table: {escape(current)} ([b]v[/b] next)" if len(ran) > 1 else "")
    return title + "\n" + escape("\n".join(lines))
