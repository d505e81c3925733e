"""Find runs and say what each is doing: running, finished, failed, stopped or lost.

State comes from the manifest and ``exit.json`` plus liveness of the run's processes (psutil), so it
is right from any process — the TUI that launched the run, another terminal, or after a reboot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from hipwizard.train.run.failure import diagnose_run
from hipwizard.train.run.incident import read_incident
from hipwizard.train.run.manifest import MANIFEST_NAME, RunEnd, RunManifest, load_manifest, read_exit
from hipwizard.train.run.stall import read_stall
from hipwizard.train.run.stop import STOP_MARK, group_members, leader
from hipwizard.train.run.tail import last_record

RunState = Literal["running", "stalled", "finished", "failed", "stopped", "lost", "not launched"]
STATE_SYMBOL = {"running": "◐", "stalled": "⏸", "finished": "✔", "failed": "✖", "stopped": "■", "lost": "?",
                "not launched": "○"}
LIVE_STATES = ("running", "stalled")  # the run's processes are alive


@dataclass
class RunInfo:
    """One run as ``hipwizard runs`` lists it."""
    run_dir: str
    name: str
    state: RunState
    pid: int | None = None
    started: str | None = None
    ended: str | None = None
    returncode: int | None = None
    step: int | None = None
    total_steps: int | None = None
    loss: float | None = None
    cause: str | None = None
    stall: str | None = None  # stall.StallVerdict.line() while stalled
    incident: str | None = None  # the captured incident's diagnosis, "kind: line" (incident.txt has the rest)
    attempt: int = 1

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def symbol(self) -> str:
        return STATE_SYMBOL[self.state]


def is_running(manifest: RunManifest) -> bool:
    """True while any process of the run is alive (cheap while the supervisor lives: no process scan)."""
    if leader(manifest) is not None:
        return True
    return bool(group_members(manifest))


def run_state(manifest: RunManifest | None, run_dir: Path) -> tuple[RunState, RunEnd | None]:
    if manifest is None:
        return "not launched", None
    if is_running(manifest):
        if read_stall(run_dir, manifest.trainer_log_path) is not None:
            return "stalled", None
        return "running", None
    end = read_exit(run_dir)
    if end is None:
        return "lost", None  # no process and no record of the end: killed with the machine, or kill -9
    if end.stopped or (run_dir / STOP_MARK).exists():
        return "stopped", end
    return ("finished" if end.returncode == 0 else "failed"), end


def run_info(run_dir: str | Path, *, with_progress: bool = True) -> RunInfo:
    """The state of one run directory, with last step/loss and, for a failure, its cause in one line."""
    run_dir = Path(run_dir).resolve()
    manifest = load_manifest(run_dir)
    state, end = run_state(manifest, run_dir)
    info = RunInfo(str(run_dir), manifest.name if manifest else run_dir.name, state)
    if manifest is None:
        return info
    info.pid, info.started = manifest.pid, manifest.started
    if end:
        info.ended, info.returncode = end.ended, end.returncode
    if with_progress:
        rec = last_record(manifest.trainer_log_path)
        if rec:
            info.step, info.total_steps = rec.get("current_steps"), rec.get("total_steps")
            with_loss = rec if "loss" in rec else last_record(manifest.trainer_log_path, key="loss")
            info.loss = with_loss.get("loss") if with_loss else None
    info.attempt = manifest.attempt
    incident = read_incident(run_dir)
    if incident is not None and incident.diagnosis is not None:
        info.incident = f"{incident.diagnosis.kind}: {incident.diagnosis.line}"
    if state == "stalled":
        verdict = read_stall(run_dir, manifest.trainer_log_path)
        info.stall = verdict.line() if verdict else None
    if state in ("failed", "lost"):
        failure = diagnose_run(manifest)
        info.cause = failure.line if failure else None
    return info


def find_run_dirs(roots: list[Path]) -> list[Path]:
    """Run directories (holding run.json) at, or one or two levels below, each root."""
    found: dict[Path, None] = {}
    for root in roots:
        root = Path(root).expanduser()
        for pattern in (MANIFEST_NAME, f"*/{MANIFEST_NAME}", f"*/*/{MANIFEST_NAME}"):
            for m in sorted(root.glob(pattern)):
                found[m.parent.resolve()] = None
    return list(found)


def list_runs(roots: list[Path]) -> list[RunInfo]:
    """Every run under the roots, newest first."""
    infos = [run_info(d) for d in find_run_dirs(roots)]
    return sorted(infos, key=lambda i: i.started or "", reverse=True)
