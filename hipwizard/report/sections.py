"""The migration record a report is built from, one dataclass per section: ``collect`` fills it from what the
steps saved, ``document`` turns it into blocks. Dicts remain only where the data is a map by nature and is
shown as one: an environment stamp (the doctor's fingerprint format), a run's configuration keys, versions.

A step that has not run is None in ``Record``; a port review that cannot be read is ``Unreadable``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hipwizard.parity import ComparisonEntry

Stamp = dict[str, Any]  # an environment fingerprint, as hipwizard.doctor.stamp_from_report makes it


# --- doctor ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckRow:
    title: str
    status: str
    found: str
    why: str
    fix: str


@dataclass(frozen=True)
class DoctorSection:
    origin: str
    checks: list[CheckRow]
    environment: Stamp

    @property
    def counts(self) -> list[tuple[str, int]]:
        """(status, how many checks have it), in the order the statuses first appear."""
        counts: dict[str, int] = {}
        for c in self.checks:
            counts[c.status] = counts.get(c.status, 0) + 1
        return list(counts.items())


# --- port -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decisions:
    accepted: int
    edited: int
    rejected: int
    pending: int
    changed: int


@dataclass(frozen=True)
class RuleRow:
    """A risk rule on changed hunks: how many hunks carry it and how many of those are still pending."""

    rule: str
    severity: str
    hunks: int
    pending: int
    reason: str


@dataclass(frozen=True)
class UntouchedRow:
    """A risk rule on unchanged lines (to edit by hand): where it is."""

    rule: str
    severity: str
    places: int
    files: list[str]
    hint: str


@dataclass(frozen=True)
class ApiRow:
    """A CUDA API the target HIP version lacks (``kind``: too new, unsupported, removed) and how often."""

    kind: str
    name: str
    places: int


@dataclass(frozen=True)
class LastWrite:
    """The review's last write: how many files at which revision, and the compile check that really ran
    (``arch`` empty: the files were not compile-checked; ``check_note``: why the arch differs, if it does)."""

    files: int
    revision: int
    compile_errors: int
    arch: str
    check_note: str


@dataclass(frozen=True)
class PortSection:
    src: str
    out: str
    backend: str
    hip_version: str
    files: int
    hunks: int
    decisions: Decisions
    flagged: int
    by_rule: list[RuleRow]
    untouched: list[UntouchedRow]
    diagnostics: list[ApiRow]
    last_write: LastWrite | None
    conflicts: list[str]
    edited_files: list[str]
    vanished: int
    environment: Stamp | None
    written_environment: Stamp | None
    mode: str = "fork"  # the workspace's output mode: "fork" (a HIP copy) or "dual" (one source, issue 31)
    guard: str = ""  # the dual-target mode's guard macro


@dataclass(frozen=True)
class Unreadable:
    """A step's saved result that could not be read: the one line saying why."""

    error: str


# --- parity ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    """One side of a comparison as the report shows it (what ran, where, with what)."""

    device_name: str = ""
    dtype: str = ""
    torch: str = ""
    model: str = ""
    file: str = ""
    environment: Stamp | None = None


@dataclass(frozen=True)
class LayerRow:
    name: str
    verdict: str
    cosine: float | None
    max_abs: float | None
    rel_l2: float | None


@dataclass(frozen=True)
class ComparisonSummary:
    """The latest comparison, read back from its saved report."""

    headline: str
    verdict: str | None
    tolerance: str | None
    first_divergent: str | None
    reference: Side
    candidate: Side
    forward: list[LayerRow]
    backward: list[LayerRow]
    triangle_verdict: str | None
    environment: Stamp | None


@dataclass(frozen=True)
class ParitySection:
    comparisons: list[ComparisonEntry]  # newest first
    latest: ComparisonSummary | None


# --- train ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Series:
    """A run's logged points, one list per quantity, aligned on ``step``."""

    step: list[int] = field(default_factory=list)
    loss: list[float | None] = field(default_factory=list)
    lr: list[float | None] = field(default_factory=list)
    throughput: list[float | None] = field(default_factory=list)
    vram: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class PlanSummary:
    """A run's config as hipwizard plans it today: memory predicted, and the advisor's pick."""

    predicted_gib: float | None
    fits: bool | None
    source: str | None
    device: str | None
    device_vram_gib: float | None
    baseline: str | None
    advice: str | None
    advice_speedup: float | None


@dataclass(frozen=True)
class RunSection:
    name: str
    state: str
    symbol: str
    cause: str | None
    started: Any
    duration_s: float | None
    platform: str | None
    versions: dict[str, str]
    steps: int | None
    final_loss: float | None
    series: Series
    config: dict[str, Any]
    environment: Stamp | None
    run_dir: str
    peak_vram_gib: float | None
    plan: PlanSummary | None
    env_delta: dict[str, Any] = field(default_factory=dict)  # only with --full


@dataclass(frozen=True)
class MeasurementRow:
    """One calibrated config: what it measured, and how far the prediction made before it ran was off."""

    label: str
    ok: bool
    error: str | None
    step_s: float | None
    tokens_per_s: float | None
    peak_gib: float | None
    step_err: float | None
    peak_err: float | None


@dataclass(frozen=True)
class CalibrationSection:
    machine: str | None
    created: str | None
    gpu: str | None
    wall_s: float
    stopped: bool
    ceiling_tflops: float | None
    versions: dict[str, str]
    environment: Stamp | None
    measurements: list[MeasurementRow]


@dataclass(frozen=True)
class TrainSection:
    runs: list[RunSection]
    calibrations: list[CalibrationSection]


# --- the whole record -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    title: str
    generated: str
    hipwizard: str
    workspace: str
    full: bool
    environment: Stamp
    doctor: DoctorSection | None
    port: PortSection | Unreadable | None
    parity: ParitySection | None
    train: TrainSection | None
