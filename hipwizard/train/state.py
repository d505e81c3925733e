"""The train step's line on the home screen: e.g. "run 'lora-8b' running, step 120/500, loss 1.23"."""

from __future__ import annotations

from pathlib import Path

from hipwizard.workspace import StepStatus


def summarize(ws) -> StepStatus:
    """From the workspace's latest run (``train.json`` last_run, else the newest under runs/)."""
    from hipwizard.train.runs import find_run_dirs, run_info

    last = ws.read_state("train").get("last_run")
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
    state = {"finished": "done", "running": "in progress", "not launched": "in progress"}.get(info.state, "attention")
    if info.state == "stopped":
        state = "in progress"
    return StepStatus(state, ", ".join(parts))
