"""What a comparison found, as plain dataclasses that round-trip through JSON (no numpy, no torch).

The CLI prints it, ``--json`` emits it, the workspace stores it and the dashboard reads it back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

VERDICT_SYMBOL = {
    "pass": "✔", "fail": "✖", "nan": "✖", "inf": "✖", "missing": "✖", "shape": "✖", "extra": "⚠",
}
VERDICT_WORD = {
    "pass": "pass", "fail": "FAIL", "nan": "NaN", "inf": "Inf", "missing": "missing", "shape": "shape",
    "extra": "extra",
}


@dataclass
class ElementError:
    index: tuple[int, ...]
    ref: float
    cand: float
    abs_err: float


@dataclass
class Metrics:
    """The numbers for one module. ``verdict`` is 'pass', 'fail', 'nan' or 'inf'."""

    cosine: float
    max_abs: float
    rel_l2: float
    outside_share: float
    nan_count: int
    inf_count: int
    verdict: str
    reasons: list[str] = field(default_factory=list)
    histogram: list[tuple[str, int]] = field(default_factory=list)
    worst: list[ElementError] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Metrics":
        d = dict(d)
        d["histogram"] = [tuple(h) for h in d.get("histogram", [])]
        d["worst"] = [ElementError(tuple(w["index"]), w["ref"], w["cand"], w["abs_err"]) for w in d.get("worst", [])]
        return cls(**d)


@dataclass
class LayerResult:
    """One module (or harness case) of a comparison, in execution order (``order``)."""

    name: str
    order: int
    shape: list[int]
    verdict: str  # pass | fail | nan | inf | missing | shape | extra
    metrics: Metrics | None = None
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def label(self) -> str:
        """Symbol and word, never colour alone: '✔ pass', '✖ FAIL', '✖ NaN'."""
        return f"{VERDICT_SYMBOL.get(self.verdict, '?')} {VERDICT_WORD.get(self.verdict, self.verdict)}"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerResult":
        d = dict(d)
        if d.get("metrics") is not None:
            d["metrics"] = Metrics.from_dict(d["metrics"])
        return cls(**d)


@dataclass
class Comparison:
    """A whole comparison: both sides' metadata, the tolerance used, per-module results and the verdict."""

    reference: dict[str, Any]
    candidate: dict[str, Any]
    tolerance: dict[str, Any]
    layers: list[LayerResult]
    first_divergent: str | None = None
    problems: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """'invalid' (inputs do not line up), 'fail' or 'pass'."""
        if self.problems:
            return "invalid"
        compared = [layer for layer in self.layers if layer.verdict != "extra"]
        if compared and all(layer.passed for layer in compared):
            return "pass"
        return "fail"

    @property
    def counts(self) -> tuple[int, int]:
        compared = [layer for layer in self.layers if layer.verdict != "extra"]
        return sum(layer.passed for layer in compared), len(compared)

    def headline(self) -> str:
        """One line: '✔ pass — 7/7 modules within bf16 tolerance' or where divergence starts."""
        ok, total = self.counts
        tol = self.tolerance.get("name", "?")
        if self.verdict == "invalid":
            return f"✖ invalid — {self.problems[0]}" + (f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else "")
        if self.verdict == "pass":
            return f"✔ pass — {ok}/{total} modules within {tol} tolerance"
        start = f"; divergence starts at {self.first_divergent}" if self.first_divergent else ""
        return f"✖ fail — {ok}/{total} modules within {tol} tolerance{start}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        d["headline"] = self.headline()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Comparison":
        return cls(
            reference=d["reference"], candidate=d["candidate"], tolerance=d["tolerance"],
            layers=[LayerResult.from_dict(x) for x in d["layers"]], first_divergent=d.get("first_divergent"),
            problems=list(d.get("problems", [])), timings=dict(d.get("timings", {})),
        )


def format_comparison(comp: Comparison) -> str:
    """The comparison as a plain-text table (for the terminal and logs), headline last."""
    name_w = max([len("module")] + [len(layer.name) for layer in comp.layers])
    ref, cand = comp.reference, comp.candidate
    lines = [
        f"reference: {ref.get('file')}  {ref.get('dtype')} on {ref.get('device_name') or ref.get('device')}  torch {ref.get('torch')}",
        f"candidate: {cand.get('file')}  {cand.get('dtype')} on {cand.get('device_name') or cand.get('device')}  torch {cand.get('torch')}",
        f"tolerance: {comp.tolerance.get('name')} (cosine ≥ {comp.tolerance.get('cosine_min'):g}, "
        f"rel L2 ≤ {comp.tolerance.get('rel_l2_max'):g})",
        "",
        f"{'#':>3}  {'module':<{name_w}}  {'shape':<16} {'cosine':>12} {'max abs':>10} {'rel L2':>10} {'outside':>8}  verdict",
    ]
    for layer in comp.layers:
        m = layer.metrics
        shape = "×".join(str(s) for s in layer.shape)
        if m is None:
            nums = f"{'—':>12} {'—':>10} {'—':>10} {'—':>8}"
        else:
            nums = f"{m.cosine:>12.8f} {m.max_abs:>10.3g} {m.rel_l2:>10.3g} {m.outside_share:>8.2%}"
        mark = "  ◀ divergence starts" if layer.name == comp.first_divergent else ""
        detail = f"  ({layer.detail})" if layer.detail and not layer.passed else ""
        lines.append(f"{layer.order:>3}  {layer.name:<{name_w}}  {shape:<16} {nums}  {layer.label}{mark}{detail}")
    lines += ["", comp.headline()]
    return "\n".join(lines)
