"""Text renderings for the Parity dashboard: module details, error histogram, loss-curve overlay.

Pure functions from report objects to Rich markup strings; the screen only places them.
"""

from __future__ import annotations

import math

from rich.markup import escape

from hipwizard.parity.curves import CurveGap
from hipwizard.parity.report import Comparison, LayerResult

BAR = "█"


def side_line(label: str, side: dict) -> str:
    where = side.get("device_name") or side.get("device", "?")
    versions = [f"torch {side['torch']}"] if side.get("torch") else []
    if side.get("hip"):
        versions.append(f"HIP {side['hip']}")
    if side.get("cuda"):
        versions.append(f"CUDA {side['cuda']}")
    return f"[b]{label}[/b] {escape(str(side.get('file', '?')))} · {side.get('dtype', '?')} on {escape(str(where))} · {', '.join(versions)}"


def headline(comp: Comparison) -> str:
    return "\n".join([
        f"[b]{escape(comp.headline())}[/b]",
        side_line("reference", comp.reference),
        side_line("candidate", comp.candidate),
    ])


def fmt(value: float, spec: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return format(value, spec)


def depth_series(comp: Comparison) -> list[float]:
    """log10(rel L2) by execution order, shifted so 1e-12 is 0 (higher = worse); non-finite -> top."""
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
    lines += ["", f"cosine {fmt(m.cosine, '.8f')}   max abs {fmt(m.max_abs, '.3g')}   rel L2 {fmt(m.rel_l2, '.3g')}   "
                  f"outside {m.outside_share:.2%}   NaN {m.nan_count}   Inf {m.inf_count}"]
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


def curves_plot(gap: CurveGap, width: int = 60, height: int = 8) -> str:
    """Both smoothed curves on one character grid: A as '●', B as '○', both on a cell as '◉'."""
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
    rows.append(f"          step {steps[0]} … {steps[-1]}")
    rows.append(f"● A {escape(gap.a.name)}   ○ B {escape(gap.b.name)}   ◉ both   (EMA {gap.smoothing:g})")
    rows.append(escape(gap.headline()))
    return "\n".join(rows)
