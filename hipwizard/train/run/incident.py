"""Capture what a run looked like when it stalled or failed, once, into its run folder.

``capture(manifest, trigger, ...)`` writes ``incident.json`` (the record) and ``incident.txt`` (the same for a
person): the Python stacks of the trainer processes (py-spy, non-blocking: it reads a stopped or hung process
without pausing it), the GPU state (``hipwizard.gpu``'s telemetry chain), the amdgpu / GPU-reset lines of the
kernel log where it is readable (dmesg, else journalctl -k; not readable is said), the NCCL/RCCL/gloo lines of
the run's log, and the classification (``classify``) with its evidence and fix. Every tool runs with a timeout;
a tool that is missing or refused is one note, never a failed capture.

Only processes that are provably the run's are read (``stop.run_processes``: the marker in their
environment), and reading a stack sends no signal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import psutil

from hipwizard.atomic import atomic_write_json, atomic_write_text
from hipwizard.gpu import GpuTelemetry
from hipwizard.train.run.classify import Diagnosis, classify
from hipwizard.train.run.manifest import RunManifest
from hipwizard.train.run.stop import run_processes, trainer_processes
from hipwizard.train.run.tail import read_end

INCIDENT_NAME = "incident.json"
INCIDENT_TEXT = "incident.txt"
TOOL_TIMEOUT_S = 20.0
_KERNEL = re.compile(r"amdgpu|GPU reset|gpu hang|ring \S+ timeout|VM_L2|page fault|HW Exception|NVRM: Xid|"
                     r"GPU has fallen off|kfd|hung_task|Out of memory: Killed", re.I)
_COMM = re.compile(r"\b(NCCL|RCCL)\b|ProcessGroup(Gloo|NCCL)|\bgloo\b|c10d|Watchdog caught|collective", re.I)
NCCL_DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,COLL,NET"}
KEEP_LINES = 200


@dataclass
class Stack:
    pid: int
    status: str  # the process state when read: running, sleeping, stopped, ...
    cmdline: str
    text: str  # py-spy's dump, or why there is none


@dataclass
class Incident:
    trigger: str  # "stall" or "exit code N"
    captured: str
    attempt: int
    stacks: list[Stack] = field(default_factory=list)
    stacks_note: str = ""
    gpu: list[str] = field(default_factory=list)
    kernel: list[str] = field(default_factory=list)
    kernel_note: str = ""
    comm: list[str] = field(default_factory=list)
    comm_note: str = ""
    stall: str = ""  # the stall verdict's line, for a stall
    diagnosis: Diagnosis | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Incident:
        diag = data.get("diagnosis")
        stacks = [Stack(**s) for s in data.get("stacks") or [] if isinstance(s, dict)]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k not in ("stacks", "diagnosis")}
        return cls(**fields, stacks=stacks, diagnosis=Diagnosis.from_dict(diag) if isinstance(diag, dict) else None)

    def text(self) -> str:
        out = [f"incident: {self.trigger} (attempt {self.attempt}), captured {self.captured}"]
        if self.stall:
            out.append(f"stall: {self.stall}")
        if self.diagnosis is not None:
            d = self.diagnosis
            out += ["", f"diagnosis: {d.kind}: {d.line}", f"fix: {d.fix}", "evidence:"]
            out += [f"  {e}" for e in d.evidence] or ["  (none)"]
        out += ["", "== Python stacks of the trainer processes (py-spy) =="]
        out += [self.stacks_note] if self.stacks_note else []
        for s in self.stacks:
            out += [f"-- pid {s.pid} ({s.status}): {s.cmdline[:200]}", s.text.rstrip(), ""]
        out += ["== GPU state =="] + (self.gpu or ["(no reading)"])
        out += ["", "== kernel log: amdgpu / GPU reset lines =="] + ([self.kernel_note] if self.kernel_note else [])
        out += self.kernel
        out += ["", "== NCCL / RCCL / gloo lines of train.log =="] + ([self.comm_note] if self.comm_note else [])
        out += self.comm
        return "\n".join(out) + "\n"


def py_spy() -> str | None:
    """py-spy beside this Python (the venv) or on PATH."""
    sibling = Path(sys.executable).parent / "py-spy"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    return shutil.which("py-spy")


def _run(argv: list[str], timeout: float = TOOL_TIMEOUT_S) -> tuple[int, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, f"{argv[0]} is not installed"
    except subprocess.TimeoutExpired:
        return 124, f"{Path(argv[0]).name} took longer than {timeout:g} s"
    except OSError as exc:
        return 126, f"{argv[0]}: {exc}"
    return p.returncode, (p.stdout + ("\n" + p.stderr if p.returncode and p.stderr else "")).strip()


def python_stacks(procs: list[psutil.Process]) -> tuple[list[Stack], str]:
    """py-spy's dump of each process (``--nonblocking``: a stopped process cannot be paused, and a live
    one is not disturbed); the note says why there are none."""
    if not procs:
        return [], "no trainer process was alive to read"
    tool = py_spy()
    if tool is None:
        return [], "py-spy is not installed, so no Python stacks (pip install py-spy; it comes with hipwizard[train])"
    stacks = []
    for p in procs:
        try:
            status, cmd = p.status(), " ".join(p.cmdline())
        except psutil.Error:
            continue
        rc, text = _run([tool, "dump", "--nonblocking", "--pid", str(p.pid)])
        if rc != 0 and "ermission" in text:
            text = f"py-spy may not read this process (ptrace refused: run as its user, or set " \
                   f"kernel.yama.ptrace_scope=0): {text.splitlines()[-1] if text else ''}"
        stacks.append(Stack(p.pid, status, cmd, text or f"py-spy exited with {rc} and said nothing"))
    return stacks, ""


def gpu_state(telemetry: GpuTelemetry | None = None) -> list[str]:
    reading = (telemetry or GpuTelemetry()).sample()
    out = [f"source: {reading.source}"]
    for s in reading.samples:
        vram = f"{s.vram_used / 2**30:.1f}/{s.vram_total / 2**30:.1f} GiB" if s.vram_used is not None and s.vram_total \
            else "VRAM ?"
        util = f"{s.util_pct:.0f}%" if s.util_pct is not None else "?"
        out.append(f"GPU {s.index} {s.name or ''}: {vram}, util {util}".replace("  ", " "))
    out += [f"note: {n}" for n in reading.notes]
    return out


_CTIME = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
_JOURNAL = re.compile(r"^(\w{3} +\d+ \d\d:\d\d:\d\d) ")


def line_time(line: str) -> float | None:
    """When a dmesg --ctime or journalctl line was logged (local time), or None."""
    try:
        if m := _CTIME.match(line):
            return time.mktime(time.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y"))
        if m := _JOURNAL.match(line):
            year = time.localtime().tm_year
            return time.mktime(time.strptime(f"{year} {' '.join(m.group(1).split())}", "%Y %b %d %H:%M:%S"))
    except (ValueError, OverflowError):
        return None
    return None


def kernel_lines(limit: int = KEEP_LINES, since: float | None = None) -> tuple[list[str], str]:
    """GPU-related lines of the kernel log (dmesg, else journalctl -k) logged since ``since`` (epoch s; the run's
    start, less a minute: older lines belong to other runs), and a note when it is not readable."""
    notes = []
    for argv in (["dmesg", "--ctime"], ["journalctl", "-k", "--no-pager", "-n", "20000"]):
        rc, text = _run(argv)
        if rc == 0 and text:
            lines = [ln for ln in text.splitlines() if _KERNEL.search(ln)]
            if since is not None:
                lines = [ln for ln in lines if (t := line_time(ln)) is None or t >= since - 60]
            return lines[-limit:], "" if lines else f"{argv[0]}: no amdgpu / GPU reset line in the kernel log" + (
                " since the run started" if since is not None else "")
        notes.append(f"{argv[0]}: {(text.splitlines() or ['no output'])[-1][:160]}")
    return [], "the kernel log is not readable here (" + "; ".join(notes) + ")"


def comm_lines(log_text: str, limit: int = KEEP_LINES) -> tuple[list[str], str]:
    lines = [ln.strip()[:400] for ln in log_text.splitlines() if _COMM.search(ln)]
    if any(re.search(r"NCCL INFO|NCCL WARN", ln) for ln in lines):
        return lines[-limit:], ""
    note = "the run was not started with NCCL_DEBUG=INFO: run it again with it for RCCL's own account " \
           "(hipwizard train run RUN_DIR --resume --nccl-debug)"
    return lines[-limit:], note


def attempt_text(log_text: str) -> str:
    """The part of train.log written by the current attempt (after the last resume marker)."""
    cut = log_text.rfind(ATTEMPT_MARK)
    return log_text[cut:] if cut >= 0 else log_text


ATTEMPT_MARK = "hipwizard: attempt "


def capture(manifest: RunManifest, trigger: str, *, attempt: int = 1, stall: str = "", returncode: int | None = None,
            telemetry: GpuTelemetry | None = None) -> Incident:
    """Capture and save the incident of ``manifest``'s run (see the module docstring); returns it."""
    procs = trainer_processes(run_processes(manifest))
    stacks, stacks_note = python_stacks(procs)
    log_text = attempt_text(read_end(manifest.log_path))
    kernel, kernel_note = kernel_lines(since=manifest.started_epoch or None)
    comm, comm_note = comm_lines(log_text)
    incident = Incident(trigger, datetime.now(timezone.utc).isoformat(timespec="seconds"), attempt, stacks,
                        stacks_note, gpu_state(telemetry), kernel, kernel_note, comm, comm_note, stall)
    incident.diagnosis = classify(log_text, kernel=kernel, stacks=[(s.pid, s.status, s.text) for s in stacks],
                                  stalled=trigger == "stall", returncode=returncode)
    save(Path(manifest.run_dir), incident)
    return incident


def amend(manifest: RunManifest, returncode: int) -> Incident | None:
    """A stalled run that then failed (a rank stuck, the others' collective timing out): the stall's stacks and
    kernel lines stay, the log's lines and the diagnosis are read again with what the end wrote."""
    incident = read_incident(manifest.run_dir)
    if incident is None:
        return None
    log_text = attempt_text(read_end(manifest.log_path))
    incident.comm, incident.comm_note = comm_lines(log_text)
    incident.trigger = f"{incident.trigger}, then exit code {returncode}"
    incident.diagnosis = classify(log_text, kernel=incident.kernel, stacks=[(s.pid, s.status, s.text) for s in incident.stacks],
                                  stalled=True, returncode=returncode)
    save(Path(manifest.run_dir), incident)
    return incident


def save(run_dir: Path, incident: Incident) -> None:
    atomic_write_text(run_dir / INCIDENT_TEXT, incident.text())
    atomic_write_json(run_dir / INCIDENT_NAME, incident.to_dict())


def read_incident(run_dir: str | Path) -> Incident | None:
    try:
        data = json.loads((Path(run_dir) / INCIDENT_NAME).read_text(encoding="utf-8"))
        return Incident.from_dict(data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def set_aside(run_dir: str | Path, attempt: int) -> None:
    """Keep an earlier attempt's incident under its attempt number (a new attempt captures its own)."""
    for name in (INCIDENT_NAME, INCIDENT_TEXT):
        src = Path(run_dir) / name
        if src.is_file() and not src.is_symlink():
            stem, dot, ext = name.partition(".")
            os.replace(src, Path(run_dir) / f"{stem}.attempt-{attempt}{dot}{ext}")


def now() -> float:
    return time.time()
