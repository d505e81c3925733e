"""The Parity step's workspace state: saved comparison reports, the last curves overlay, the summary.

``.hipwizard/parity.json`` lists comparisons (newest last, with their verdict) and points at full
reports in ``.hipwizard/parity/``; the dashboard reads those back. It also holds the last loss-curves
overlay (``curves``: the two run folders, smoothing, threshold) and ``demo`` (the workspace offers the demo
comparison). This module is the only reader and writer of that file. No numpy, no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hipwizard.atomic import atomic_write_json
from hipwizard.doctor.state import environment_stamp
from hipwizard.parity.compare.result import Comparison
from hipwizard.workspace import StepStatus, Workspace, register_state_fields

STEP = "parity"
STATE_FIELDS = {"curves": dict, "comparisons": list, "demo": bool}  # checked by Workspace.state_file
register_state_fields(STEP, STATE_FIELDS)
KEEP = 20  # comparisons remembered in the state file


def reports_dir(ws: Workspace) -> Path:
    return ws.state_dir / "parity"


def record_comparison(ws: Workspace, comparison: Comparison, label: str = "") -> Path:
    """Write the full report atomically and append its summary to the step state. Returns the report path."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    path = reports_dir(ws) / f"compare-{stamp}.json"

    atomic_write_json(path, {**comparison.to_dict(), "environment": environment_stamp(ws)})
    ok, total = comparison.counts
    entry = {
        "report": str(path.relative_to(ws.state_dir)), "verdict": comparison.verdict, "passed": ok,
        "total": total, "first_divergent": comparison.first_divergent,
        "tolerance": comparison.tolerance.get("name"), "label": label,
        "reference": _side(comparison.reference), "candidate": _side(comparison.candidate),
    }
    history = list(ws.read_state(STEP).get("comparisons", []))[-(KEEP - 1):] + [entry]
    ws.update_state(STEP, comparisons=history)
    return path


@dataclass(frozen=True)
class ComparisonEntry:
    """One remembered comparison, as ``parity.json`` lists it: its verdict and counts, and where its full
    report lies (``report``: relative to ``.hipwizard/``)."""

    report: str
    verdict: str
    passed: int | None = None
    total: int | None = None
    first_divergent: str | None = None
    tolerance: str | None = None
    label: str = ""
    reference: str = ""  # "bf16 on cuda"
    candidate: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ComparisonEntry | None:
        """The entry, or None when it is damaged (no report path or verdict)."""
        report, verdict = d.get("report"), d.get("verdict")
        if not isinstance(report, str) or not isinstance(verdict, str):
            return None

        def num(key: str) -> int | None:
            v = d.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        def text(key: str) -> str:
            v = d.get(key)
            return v if isinstance(v, str) else ""

        return cls(report, verdict, num("passed"), num("total"), text("first_divergent") or None,
                   text("tolerance") or None, text("label"), text("reference"), text("candidate"))


def comparisons(ws: Workspace) -> list[ComparisonEntry]:
    """The remembered comparisons, oldest first (damaged entries left out)."""
    raw = ws.read_state(STEP).get("comparisons")
    entries = [ComparisonEntry.from_dict(e) for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
    return [e for e in entries if e is not None]


def saved_report(ws: Workspace, entry: ComparisonEntry) -> dict[str, Any] | None:
    """The full report of ``entry`` as it was saved (``Comparison.to_dict()`` plus ``environment``), or None
    when it is gone or unreadable."""
    try:
        data = json.loads((ws.state_dir / entry.report).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class CurvesSpec:
    """The loss-curves overlay the dashboard shows: two run folders (or logs) and how to compare them."""

    run_a: str
    run_b: str
    smoothing: float = 0.3
    threshold: float = 0.05


def record_curves(ws: Workspace, run_a: str, run_b: str, smoothing: float, threshold: float) -> None:
    """Remember the two run folders so the dashboard overlays them."""
    ws.update_state(STEP, curves={"a": run_a, "b": run_b, "smoothing": smoothing, "threshold": threshold})


def curves_spec(ws: Workspace) -> CurvesSpec | None:
    """The overlay last recorded, or None (also for a damaged entry)."""
    spec = ws.read_state(STEP).get("curves")
    if not isinstance(spec, dict):
        return None
    try:
        return CurvesSpec(str(spec["a"]), str(spec["b"]), float(spec.get("smoothing", 0.3)),
                          float(spec.get("threshold", 0.05)))
    except (TypeError, KeyError, AttributeError, ValueError):
        return None


def mark_demo(ws: Workspace) -> None:
    """Mark the workspace so the dashboard offers the demo comparison (written only when not marked yet)."""
    if not ws.read_state(STEP).get("demo"):
        ws.update_state(STEP, demo=True)


def is_demo(ws: Workspace) -> bool:
    """Whether the dashboard offers the demo comparison: this step, or the whole workspace, is the demo's."""
    return bool(ws.read_state(STEP).get("demo")) or ws.is_demo


def latest_comparison(ws: Workspace) -> Comparison | None:
    """The newest saved comparison, or None. A damaged report is skipped (the state says why)."""
    for entry in reversed(ws.read_state(STEP).get("comparisons", [])):
        try:
            data = json.loads((ws.state_dir / entry["report"]).read_text(encoding="utf-8"))
            return Comparison.from_dict(data)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def summarize(ws: Workspace) -> StepStatus:
    """not started / done (last comparison passed) / attention (it failed or was invalid)."""
    state: dict[str, Any] = ws.read_state(STEP)
    history = state.get("comparisons", [])
    if not history:
        if state.get("demo"):
            return StepStatus("not started", "demo: press D on the Parity screen to compare the tiny Llama")
        return StepStatus("not started", "no comparison yet")
    last = history[-1]
    what = f"{last['candidate']} vs {last['reference']}"
    if last["verdict"] == "pass":
        return StepStatus("done", f"✔ {last['passed']}/{last['total']} modules within {last['tolerance']} tolerance ({what})")
    if last["verdict"] == "invalid":
        return StepStatus("attention", f"✖ last comparison was invalid ({what})")
    start = f", divergence starts at {last['first_divergent']}" if last.get("first_divergent") else ""
    return StepStatus("attention", f"✖ {last['passed']}/{last['total']} modules pass{start} ({what})")


def _side(side: dict[str, Any]) -> str:
    return f"{side.get('dtype', '?')} on {side.get('device', '?')}"
