"""What a comparison found, as plain dataclasses that round-trip through JSON (no numpy, no torch).

The CLI prints it, ``--json`` emits it, the workspace stores it and the dashboard reads it back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# A comparison that carries its gradients holds a second Comparison (direction "backward"); an attention
# matrix holds one BackendRow (a Comparison, or why that backend did not run) per backend. All of it round-trips through to_dict / from_dict.

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


def keep_every_element(form: str, direction: str) -> str:
    """How to capture a row stored as ``form`` (a sketch) whole, for the note under a table or a row's details."""
    if form.startswith("sketch r"):
        return "--grad-weights lora-full keeps LoRA-target ∂W whole"
    if direction == "backward":
        return "--grad-sketch 0 keeps every element of ∂out/∂in"
    return "capture without --compact to keep every element"


@dataclass
class Metrics:
    """The numbers for one module. ``verdict`` is 'pass', 'fail', 'nan' or 'inf'."""

    cosine: float
    max_abs: float | None  # None: not known (a row stored as a sketch)
    rel_l2: float
    outside_share: float | None
    nan_count: int
    inf_count: int
    verdict: str
    reasons: list[str] = field(default_factory=list)
    histogram: list[tuple[str, int]] = field(default_factory=list)
    worst: list[ElementError] = field(default_factory=list)
    sketch: str | None = None  # the row was stored as a sketch ("count-sketch 8192", "sketch r16"): estimates

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Metrics":
        d = dict(d)
        d["histogram"] = [tuple(h) for h in d.get("histogram", [])]
        d["worst"] = [ElementError(tuple(w["index"]), w["ref"], w["cand"], w["abs_err"]) for w in d.get("worst", [])]
        return cls(**d)


@dataclass
class Triangle:
    """The reference-relative verdict of one module ("reference triangle").

    ``port``: the candidate's error (rel L2) against the high-precision reference; ``ref``: the reference
    machine's own run-dtype error against the same high-precision reference; pass when port <= k x ref.
    """

    port: float
    ref: float
    k: float

    @property
    def ratio(self) -> float:
        if self.ref > 0:
            return self.port / self.ref
        return 0.0 if self.port == 0 else float("inf")

    @property
    def passed(self) -> bool:
        # NaN compares False: a NaN on either side never passes
        return self.port == 0.0 or self.port <= self.k * self.ref

    @property
    def label(self) -> str:
        return "✔ pass" if self.passed else "✖ FAIL"

    def as_dict(self) -> dict[str, Any]:
        return {"port": self.port, "ref": self.ref, "k": self.k, "ratio": self.ratio,
                "verdict": "pass" if self.passed else "fail"}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Triangle":
        return cls(float(d["port"]), float(d["ref"]), float(d["k"]))


@dataclass
class LayerResult:
    """One module (or harness case) of a comparison, in execution order (``order``)."""

    name: str
    order: int
    shape: list[int]
    verdict: str  # pass | fail | nan | inf | missing | shape | extra
    metrics: Metrics | None = None
    detail: str = ""
    module: str = ""  # a gradient row: the module it belongs to (the row's name says which gradient)
    triangle: Triangle | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def deciding_pass(self) -> bool:
        """Whether the row passes under the verdict that decides: the triangle's when there is one."""
        if self.triangle is not None and self.metrics is not None:
            return self.triangle.passed
        return self.passed

    @property
    def label(self) -> str:
        """Symbol and word, never colour alone: '✔ pass', '✖ FAIL', '✖ NaN'."""
        return f"{VERDICT_SYMBOL.get(self.verdict, '?')} {VERDICT_WORD.get(self.verdict, self.verdict)}"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerResult":
        d = dict(d)
        if d.get("metrics") is not None:
            d["metrics"] = Metrics.from_dict(d["metrics"])
        if d.get("triangle") is not None:
            d["triangle"] = Triangle.from_dict(d["triangle"])
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
    direction: str = "forward"  # or "backward": the rows are gradients
    backward: Comparison | None = None  # the gradients' comparison, when both captures hold them
    triangle_k: float | None = None  # set when a reference run-dtype capture gave triangle verdicts
    reference_run: dict[str, Any] | None = None  # that capture's side summary
    matrix: list[BackendRow] = field(default_factory=list)  # one row per attention backend

    @property
    def first_divergent_module(self) -> str | None:
        """The module where divergence starts (a gradient row names its module)."""
        layer = next((x for x in self.layers if x.name == self.first_divergent), None)
        return (layer.module or layer.name) if layer is not None else None

    @property
    def fixed_verdict(self) -> str:
        """This direction's verdict under the fixed dtype table alone."""
        if self.problems:
            return "invalid"
        compared = [layer for layer in self.layers if layer.verdict != "extra"]
        return "pass" if compared and all(layer.passed for layer in compared) else "fail"

    @property
    def triangle_verdict(self) -> str | None:
        """This direction's reference-relative verdict, or None without a reference run-dtype capture."""
        if self.triangle_k is None:
            return None
        if self.problems:
            return "invalid"
        compared = [layer for layer in self.layers if layer.verdict != "extra"]
        return "pass" if compared and all(layer.deciding_pass for layer in compared) else "fail"

    @property
    def own_verdict(self) -> str:
        """This direction's deciding verdict: the triangle's when given, else the fixed table's."""
        return self.triangle_verdict or self.fixed_verdict

    @property
    def verdict(self) -> str:
        """'invalid' (inputs do not line up), 'fail' or 'pass', over both directions and every backend."""
        verdicts = [self.own_verdict] + ([self.backward.verdict] if self.backward is not None else [])
        verdicts += [row.comparison.verdict for row in self.matrix if row.comparison is not None]
        for word in ("invalid", "fail"):
            if word in verdicts:
                return word
        return "pass"

    @property
    def counts(self) -> tuple[int, int]:
        compared = [layer for layer in self.layers if layer.verdict != "extra"]
        return sum(layer.passed for layer in compared), len(compared)

    def direction_headline(self) -> str:
        """This direction alone: '✔ pass — 7/7 modules within bf16 tolerance', where divergence starts, and
        the triangle's count beside it."""
        ok, total = self.counts
        tol = self.tolerance.get("name", "?")
        what = "gradients" if self.direction == "backward" else "modules"
        if self.own_verdict == "invalid":
            return f"✖ invalid — {self.problems[0]}" + (f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else "")
        fixed = f"{ok}/{total} {what} within {tol} tolerance"
        if self.triangle_k is not None:
            tri_ok = sum(layer.deciding_pass for layer in self.layers if layer.verdict != "extra")
            fixed = f"{tri_ok}/{total} {what} within {self.triangle_k:g}x the reference's own error (triangle); {fixed}"
        if self.own_verdict == "pass":
            return f"✔ pass — {fixed}"
        start = f"; divergence starts at {self.first_divergent}" if self.first_divergent else ""
        return f"✖ fail — {fixed}{start}"

    def headline(self) -> str:
        """One line for the whole comparison: forward (and backward, and each attention backend)."""
        line = self.direction_headline()
        if self.backward is not None:
            line = f"forward {line}; backward {self.backward.direction_headline()}"
        if self.matrix:
            bad = [row.attn for row in self.matrix if row.comparison is not None and row.comparison.verdict != "pass"]
            missing = [row.attn for row in self.matrix if row.comparison is None]
            line += f" · attention backends: {len(self.matrix) - len(missing)} ran"
            line += f", diverging: {', '.join(bad)}" if bad else ", none diverges"
            line += f" ({', '.join(missing)} not available)" if missing else ""
        return line

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["backward"] = self.backward.to_dict() if self.backward is not None else None
        d["matrix"] = [row.to_dict() for row in self.matrix]
        for layer, out in zip(self.layers, d["layers"], strict=True):
            out["triangle"] = layer.triangle.as_dict() if layer.triangle is not None else None
        d["verdict"] = self.verdict
        d["fixed_verdict"] = self.fixed_verdict
        d["triangle_verdict"] = self.triangle_verdict
        d["first_divergent_module"] = self.first_divergent_module
        d["headline"] = self.headline()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Comparison":
        return cls(
            reference=d["reference"], candidate=d["candidate"], tolerance=d["tolerance"],
            layers=[LayerResult.from_dict(x) for x in d["layers"]], first_divergent=d.get("first_divergent"),
            problems=list(d.get("problems", [])), timings=dict(d.get("timings", {})),
            direction=d.get("direction", "forward"),
            backward=cls.from_dict(d["backward"]) if d.get("backward") else None,
            triangle_k=d.get("triangle_k"), reference_run=d.get("reference_run"),
            matrix=[BackendRow.from_dict(row) for row in d.get("matrix", [])],
        )


@dataclass
class BackendRow:
    """One attention backend of a matrix comparison: its comparison, or (``comparison`` None) the one line
    saying why it could not run here."""

    attn: str
    comparison: Comparison | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"attn": self.attn}
        if self.error is not None:
            d["error"] = self.error
        d["comparison"] = self.comparison.to_dict() if self.comparison is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BackendRow:
        comp = d.get("comparison")
        return cls(d["attn"], Comparison.from_dict(comp) if comp else None, d.get("error"))
