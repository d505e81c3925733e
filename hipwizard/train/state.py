"""The Train step's workspace state: ``.hipwizard/train.json``, and its line on the home screen.

This module is the only reader and writer of ``train.json``::

    {"version": 1, "updated": "...",
     "last_run": "/abs/run/dir",             # the run launched last (the home line follows it)
     "launched_runs": ["/abs/run/dir", ...],  # newest first, at most KEEP: ``runs`` finds them anywhere
     "calibrations": [{...}, ...],           # calibration.Calibration.to_dict(), newest first, at most KEEP_CAL
     "ceiling": {"tflops": 760.1, "gpu": "NVIDIA H200", ...}}  # ceiling.Ceiling: the last GEMM bench

Runs themselves live in their run directories (``run.json``, ``exit.json``, logs); the state only points
at them. No torch, no llamafactory. The step's door imports this module at the top (the home screen reads
it), so the readers import the rooms they return (pydantic, psutil) when called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hipwizard.workspace import StepState, StepStatus, Workspace, register_state_fields

if TYPE_CHECKING:
    from hipwizard.train.calibration.corrections import Calibration
    from hipwizard.train.planning.ceiling import Ceiling

STEP = "train"
STATE_FIELDS = {"last_run": str, "launched_runs": list, "calibrations": list, "ceiling": dict}  # checked by Workspace.state_file
register_state_fields(STEP, STATE_FIELDS)
KEEP = 200  # launched runs remembered
KEEP_CAL = 10  # calibrations remembered


@dataclass
class TrainState:
    last_run: str | None = None
    launched_runs: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict) -> TrainState:
        last = data.get("last_run")
        runs = data.get("launched_runs")
        return cls(last if isinstance(last, str) and last else None,
                   [r for r in runs if isinstance(r, str) and r] if isinstance(runs, list) else [])


def load(ws: Workspace) -> TrainState:
    """The saved state (empty when there is none or it cannot be read)."""
    return TrainState.from_dict(ws.read_state(STEP))


def remember_run(ws: Workspace, run_dir: str | Path) -> None:
    """Record a launched run: first in ``launched_runs`` and ``last_run``. Raises ``OSError`` when the
    workspace cannot be written (the caller decides whether that matters)."""
    run_dir = str(run_dir)
    runs = [r for r in load(ws).launched_runs if r != run_dir]
    ws.update_state(STEP, launched_runs=[run_dir, *runs][:KEEP], last_run=run_dir)


def save_calibration(ws: Workspace, calibration: "Calibration") -> None:
    """Keep ``calibration`` first among the workspace's calibrations (``OSError`` when it cannot be written)."""
    old = ws.read_state(STEP).get("calibrations")
    old = [c for c in old if isinstance(c, dict)] if isinstance(old, list) else []
    ws.update_state(STEP, calibrations=[calibration.to_dict(), *old][:KEEP_CAL])


def calibrations(ws: Workspace) -> list["Calibration"]:
    """Saved calibrations, newest first (unreadable entries skipped)."""
    from hipwizard.train.calibration.corrections import Calibration  # light door: pydantic loads on use

    raw = ws.read_state(STEP).get("calibrations")
    out = [Calibration.from_dict(c) for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    return [c for c in out if c is not None]


def save_ceiling(ws: Workspace, ceiling: "Ceiling") -> None:
    ws.update_state(STEP, ceiling=ceiling.to_dict())


def ceiling(ws: Workspace | None) -> "Ceiling | None":
    """The last measured GEMM ceiling of the workspace, if any."""
    from hipwizard.train.planning.ceiling import Ceiling  # light door: pydantic loads on use

    raw = ws.read_state(STEP).get("ceiling") if ws is not None else None
    return Ceiling.from_dict(raw) if isinstance(raw, dict) else None


def launched_run_dirs(ws: Workspace) -> list[Path]:
    """Run directories launched from this workspace that still exist (wherever they are)."""
    return [Path(r) for r in load(ws).launched_runs if Path(r).is_dir()]


def summarize(ws: Workspace) -> StepStatus:
    """From the workspace's latest run (``last_run``, else the newest under runs/):
    e.g. "run 'lora-8b' running, step 120/500, loss 1.23"."""
    from hipwizard.train.run.runs import find_run_dirs, run_info  # light door: psutil loads on use

    last = load(ws).last_run
    run_dirs = [Path(last)] if last and Path(last).is_dir() else find_run_dirs([ws.runs_dir])
    if not run_dirs:
        saved = sorted(ws.runs_dir.glob("*/config.yaml")) if ws.runs_dir.is_dir() else []
        if saved:
            return StepStatus("in progress", f"run dir '{saved[-1].parent.name}' planned, not launched")
        return StepStatus("not started", "no run planned or launched yet")
    infos = [run_info(d) for d in run_dirs]
    info = max(infos, key=lambda i: i.started or "")
    parts = [f"run '{info.name}' {info.state}"]
    if info.step is not None:
        parts.append(f"step {info.step}/{info.total_steps}" if info.total_steps else f"step {info.step}")
    if isinstance(info.loss, (int, float)):
        parts.append(f"loss {info.loss:.3g}")
    if info.cause:
        parts.append(info.cause)
    by_run: dict[str, StepState] = {"finished": "done", "running": "in progress", "not launched": "in progress"}
    state = by_run.get(info.state, "attention")
    if info.state == "stopped":
        state = "in progress"
    return StepStatus(state, ", ".join(parts))
