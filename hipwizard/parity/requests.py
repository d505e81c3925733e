"""What a user asks the Parity step for (what to run, how to run it, how strict to be, what to compare) and
what a comparison gives back (``CompareOutcome``).

Plain dataclasses, cheap to import (no numpy, no torch): the dashboard builds a ``CompareRequest`` in the UI
process and hands it to the worker subprocess as JSON (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hipwizard.demo_model import build as build_demo_model
from hipwizard.errors import UserError
from hipwizard.parity.compare.result import Comparison
from hipwizard.progress import Progress, ProgressFn, quiet


@dataclass
class Subject:
    """What to run: a model folder (``demo`` = the embedded tiny Llama) or a harness file; ``adapter``: a PEFT
    (LoRA) adapter folder loaded on top of the model, as the trainer runs it (not merged)."""

    model: Path | None = None
    harness: Path | None = None
    demo: bool = False
    adapter: Path | None = None

    def resolve_model(self, progress: ProgressFn | None = None) -> Path:
        """The model folder to load; the demo's tiny Llama is built (offline, cached) on first use."""
        if self.demo:
            (progress or quiet)(Progress("build demo model"))
            return build_demo_model().model_dir
        if self.model is None:
            raise UserError("no model folder given: use --model DIR, --demo or --harness FILE.py")
        if not Path(self.model).is_dir():
            raise UserError(f"model folder {self.model} does not exist")
        return Path(self.model)


@dataclass
class RunOptions:
    """How to run the subject: dtype, device, inputs and which modules to hook.

    ``dtype`` None means the default of the action: fp32 for a capture or a same-machine comparison, the
    reference's dtype for a re-run of a reference capture.
    """

    dtype: str | None = None
    device: str = "auto"
    seed: int = 0
    batch: int = 2
    seq: int = 32
    layers: list[str] | None = None
    perturb: dict[str, float] = field(default_factory=dict)
    attn: str | None = None  # one backend, or several comma-separated: the attention-backend matrix
    backward: bool | None = None  # capture: record gradients; compare: None = when the reference has them
    loss: str = "lm"  # the scalar loss of the backward pass: lm | projection
    grad_weights: str = "lora"  # which weights' gradients: lora | all | none
    grad_sketch: int | None = None  # ∂out/∂in as count sketches of this size (None: the default; 0: every element)
    compact: bool = False  # module outputs as count sketches too (``capture.capture_model``'s ``compact``)
    perturb_grad: dict[str, float] = field(default_factory=dict)  # a slightly wrong backward (demo fault)
    triangle: bool = False  # same machine: also capture the reference in the run dtype (triangle verdicts)
    lean: bool = False  # same machine with the triangle: sketches in memory, full tensors for flagged rows (``lean``)
    environment: dict | None = None  # doctor.fingerprint of this machine, stamped in a capture's metadata
    inputs: str | None = None  # a file of input/* tensors (a run's step batch, ``step_batch``) instead of seeded ones

    @property
    def attn_backends(self) -> list[str]:
        """The attention backends asked for (empty: the model's default)."""
        return [a.strip() for a in (self.attn or "").split(",") if a.strip()]


@dataclass
class TolerancePolicy:
    """How strict a comparison is: a dtype profile (None: the less precise side's), field overrides,
    a YAML file of profiles, and the error ratio that marks where divergence starts."""

    profile: str | None = None
    overrides: dict[str, float] = field(default_factory=dict)
    file: Path | None = None
    jump: float = 4.0
    k: float | None = None  # the triangle's factor (None: compare.DEFAULT_K)

    def compare_kwargs(self) -> dict[str, Any]:
        return {"tolerance": self.profile, "overrides": self.overrides or None, "tolerance_file": self.file,
                "jump": self.jump, "k": self.k}


@dataclass
class CompareRequest:
    """One comparison, in one of three ways:

    - two captures: ``ref`` and ``cand`` (numpy only);
    - a re-run: ``ref`` and a ``subject``, fed ``ref``'s stored inputs on this machine;
    - the same machine: ``same_machine`` and a ``subject``: a float64 CPU reference against ``options.dtype``
      on ``options.device``.
    ``keep`` keeps the captures this run makes in that folder.
    """

    ref: Path | None = None
    cand: Path | None = None
    subject: Subject | None = None
    same_machine: bool = False
    options: RunOptions = field(default_factory=RunOptions)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    keep: Path | None = None
    ref_run: Path | None = None  # the reference machine's capture in the run dtype: triangle verdicts

    @property
    def how(self) -> str:
        """Which of the three ways; raises UserError (one sentence) for a request that is none of them."""
        if self.same_machine:
            if self.ref is not None or self.subject is None:
                raise UserError("--reference cpu takes no capture file: give --model DIR, --demo or --harness FILE.py")
            if self.ref_run is not None:
                raise UserError("--reference-run goes with a reference capture; with --reference cpu use --triangle")
            return "same machine"
        if self.ref is None:
            raise UserError("give a reference capture (REF.safetensors), or --reference cpu with --model/--demo/--harness")
        if self.cand is not None:
            if self.subject is not None:
                raise UserError("give a candidate capture OR --model/--demo/--harness, not both")
            return "two captures"
        if self.subject is not None:
            return "re-run of reference inputs"
        raise UserError("compare REF with what? Give CAND.safetensors, --model DIR, --demo or --harness FILE.py")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (paths as strings)."""
        return _jsonable(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompareRequest:
        subject = data.get("subject")
        tol = dict(data.get("tolerance") or {})
        return cls(
            ref=_path(data.get("ref")), cand=_path(data.get("cand")),
            subject=Subject(model=_path(subject.get("model")), harness=_path(subject.get("harness")),
                            demo=bool(subject.get("demo"))) if subject else None,
            same_machine=bool(data.get("same_machine")), options=RunOptions(**(data.get("options") or {})),
            tolerance=TolerancePolicy(profile=tol.get("profile"), overrides=tol.get("overrides") or {},
                                      file=_path(tol.get("file")), jump=tol.get("jump", 4.0), k=tol.get("k")),
            keep=_path(data.get("keep")), ref_run=_path(data.get("ref_run")),
        )


EXIT_CODES = {"pass": 0, "fail": 1, "invalid": 2}


@dataclass
class CompareOutcome:
    """A finished comparison: the result, which way it was made, and where the workspace keeps its report."""

    comparison: Comparison
    how: str
    report: Path | None = None

    @property
    def exit_code(self) -> int:
        """0 every module within tolerance, 1 a numerical failure, 2 invalid (missing modules, shapes)."""
        return EXIT_CODES[self.comparison.verdict]

    def to_dict(self) -> dict:
        return {"comparison": self.comparison.to_dict(), "how": self.how,
                "report": str(self.report) if self.report else None}

    @classmethod
    def from_dict(cls, data: dict) -> CompareOutcome:
        report = data.get("report")
        return cls(Comparison.from_dict(data["comparison"]), data.get("how", ""), Path(report) if report else None)


def demo_request(dtype: str = "bf16", device: str = "auto") -> CompareRequest:
    """The demo comparison the dashboard offers: the tiny Llama, float64 CPU reference vs ``dtype``, forward
    and backward, with the triangle (the reference also captured in ``dtype`` on the CPU)."""
    return CompareRequest(subject=Subject(demo=True), same_machine=True,
                          options=RunOptions(dtype=dtype, device=device, backward=True, triangle=True))


def _path(value: Any) -> Path | None:
    return None if value is None else Path(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return str(value) if isinstance(value, Path) else value
