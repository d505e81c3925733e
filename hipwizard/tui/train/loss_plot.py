"""A line plot drawn with plotext into a Static: loss (raw + smoothed + eval) or learning rate.

Series are named in the legend (never colour alone). plotext keeps global state, so it is only ever
called from the UI thread, in ``render``; the series arrive already thinned by the snapshot.
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.widgets import Static

Series = list[tuple[float, float]]
COLORS = ("blue", "orange", "green", "magenta")


def tick_label(value: float, span: float, fmt: str | None) -> str:
    """Enough decimals that ticks over ``span`` differ (a loss moving 12.57 -> 12.60 needs three)."""
    if fmt:
        return fmt.format(value)
    decimals = max(0, min(8, 1 - math.floor(math.log10(span / 3)))) if span > 0 else 2
    return f"{value:.{decimals}f}"


class SeriesPlot(Static):
    """``set_series({"raw": [(x, y)...], ...})`` then it redraws at its own size."""

    DEFAULT_CSS = "SeriesPlot { width: 1fr; height: 1fr; min-height: 8; }"

    def __init__(self, title: str, *, xlabel: str = "step", yfmt: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.title = title
        self.xlabel = xlabel
        self.yfmt = yfmt
        self.series: dict[str, Series] = {}

    def set_series(self, series: dict[str, Series]) -> None:
        if series != self.series:
            self.series = series
            self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, self.size.height
        if width < 20 or height < 5:
            return Text("")
        shown = {k: v for k, v in self.series.items() if v}
        if not shown:
            return Text(f"{self.title}: ○ no points yet", style="dim")
        import plotext as plt

        plt.clf()
        plt.plotsize(width, height)
        plt.theme("clear")
        for (label, pts), color in zip(shown.items(), COLORS, strict=False):
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            if len(pts) == 1:
                plt.scatter(xs, ys, label=label, marker="dot", color=color)
            else:
                plt.plot(xs, ys, label=label, marker="braille", color=color)
        plt.title(self.title)
        plt.xlabel(self.xlabel)
        lows = [y for pts in shown.values() for _, y in pts]
        lo, hi = min(lows), max(lows)
        if hi > lo:
            ticks = [lo + (hi - lo) * i / 3 for i in range(4)]
            plt.yticks(ticks, [tick_label(t, hi - lo, self.yfmt) for t in ticks])
        return Text.from_ansi(plt.build())
