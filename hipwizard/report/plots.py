"""The report's charts, drawn by matplotlib (Agg, no display) as self-contained SVG text.

Each function returns SVG markup (``<svg ...>...</svg>``, fonts as paths so it looks the same anywhere) or ""
when there is nothing to draw. Lines differ by marker and style as well as colour, and every chart has axis
labels and a legend, so it reads in grey scale too. matplotlib is imported here only: the TUI process never
loads it (the Export action runs ``hipwizard report`` in a subprocess).
"""

from __future__ import annotations

import io
import math

from hipwizard.report.sections import LayerRow
from hipwizard.textsafe import inert_line

STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]


def _figure(width: float = 6.4, height: float = 2.6):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "font.size": 8, "axes.grid": True, "grid.alpha": 0.3,
                         "svg.hashsalt": "hipwizard"})  # the same data gives the same bytes
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    return plt, fig, ax


def _svg(plt, fig) -> str:
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "hipwizard"})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _clean(xs: list, ys: list) -> tuple[list, list]:
    pairs = [(x, y) for x, y in zip(xs, ys, strict=False) if isinstance(y, (int, float)) and math.isfinite(y)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def series_chart(xs: list, lines: dict[str, list], *, title: str, ylabel: str, xlabel: str = "step",
                 logy: bool = False) -> str:
    """One chart of named lines over ``xs`` (non-numbers skipped); "" when no line has two points."""
    drawn = {name: _clean(xs, ys) for name, ys in lines.items()}
    drawn = {k: v for k, v in drawn.items() if len(v[0]) >= 2}
    if not drawn:
        return ""
    plt, fig, ax = _figure()
    for k, (name, (x, y)) in enumerate(drawn.items()):
        style, marker = STYLES[k % len(STYLES)]
        ax.plot(x, y, style, marker=marker, markersize=3, linewidth=1.2, label=_plain(name).replace("$", r"\$"))
    if logy and all(v > 0 for _, y in drawn.values() for v in y):
        ax.set_yscale("log")
    ax.set_title(_plain(title), parse_math=False)
    ax.set_xlabel(_plain(xlabel), parse_math=False)
    ax.set_ylabel(_plain(ylabel), parse_math=False)
    ax.legend(loc="best", fontsize=7)
    return _svg(plt, fig)


def _plain(text: str) -> str:
    """A label from outside (a run or module name) with no control character. matplotlib reads ``$...$`` as TeX:
    titles and axis labels are set with parse_math=False, a legend label (where it cannot be set) has its ``$``
    escaped; a name like ``$\\x$`` would otherwise stop the report with a parse error."""
    return inert_line(text)


def depth_chart(rows: list[LayerRow], *, title: str) -> str:
    """Relative L2 error per row (modules in the order given), log scale; "" without a positive value."""
    vals = [r.rel_l2 if r.rel_l2 is not None and r.rel_l2 > 0 else None for r in rows]
    x, y = _clean(list(range(len(vals))), vals)
    if not y:
        return ""
    plt, fig, ax = _figure(height=2.9)
    ax.plot(x, y, "-", marker="o", markersize=4, linewidth=1.2, label="relative L2 error")
    ax.set_yscale("log")
    ax.set_title(_plain(title), parse_math=False)
    ax.set_xlabel("module, in the order of the pass")
    ax.set_ylabel("relative L2 error")
    if len(rows) <= 24:
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([_short(inert_line(r.name)) for r in rows], rotation=35, ha="right",
                           fontsize=6, parse_math=False)
    ax.legend(loc="best", fontsize=7)
    return _svg(plt, fig)


def _short(name: str) -> str:
    """``model.layers.3.self_attn`` -> ``3.self_attn``; other names as they are, last 24 characters."""
    parts = name.split(" ", 1)
    prefix, rest = (parts[0] + " ", parts[1]) if len(parts) == 2 else ("", name)
    bits = rest.split(".")
    short = ".".join(bits[-2:]) if len(bits) > 2 else rest
    return (prefix + short)[-24:]
