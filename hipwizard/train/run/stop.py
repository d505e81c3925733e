"""Stop a run: graceful first (the Trainer finishes its step and saves), then the whole group.

1. SIGABRT to the trainer processes. The launcher sets ``LLAMABOARD_ENABLED=1``, under which
   LLaMA-Factory's LogCallback turns SIGABRT into "stop training" — the Trainer then ends the loop
   and saves, exactly as LlamaBoard's Abort button does. Only trainer processes get it: torchrun's
   agent would die of SIGABRT and orphan its workers.
2. After ``grace_s``: SIGTERM to the process group, then after ``term_s`` SIGKILL to the group and
   to every descendant seen (a grandchild that left the group is still ours).
3. Verify no process of the run survives; ``StopResult.survivors`` lists any that did.

Nothing is signalled that is not provably the run's: the supervisor must match the create time recorded
at launch and carry the run's marker (``HIPWIZARD_RUN=<token>`` in its environment, inherited by every
process it starts); a group is signalled as a whole only while each of its members is the run's. A run
whose supervisor is gone and whose group number now belongs to someone else is "gone": nothing is sent.

Blocking (it waits); the UI calls it from a thread worker.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import psutil

from hipwizard.atomic import atomic_write_text
from hipwizard.train.run.manifest import RUN_ENV, STOP_NAME, RunManifest, read_exit, write_exit

STOP_MARK = STOP_NAME
AFTER_TRAINERS_S = 5.0  # how long the launchers above the trainers get to exit on their own


@dataclass
class StopResult:
    """What ``stop_run`` did: signals sent in order, and any process still alive at the end."""

    steps: list[str] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    elapsed_s: float = 0.0
    was_running: bool = True

    @property
    def clean(self) -> bool:
        return not self.survivors


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def marked(p: psutil.Process, token: str) -> bool:
    """True when ``p`` carries the run's marker (``HIPWIZARD_RUN=<token>`` in its environment, set by the
    launcher for the supervisor and inherited by everything it starts). Another user's process cannot
    be read, so it is never ours."""
    if not token:
        return False
    try:
        return p.environ().get(RUN_ENV) == token
    except (psutil.Error, OSError):
        return False


def _group(pgid: int) -> list[psutil.Process]:
    """Live processes whose process group is ``pgid``, ours or not."""
    out = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and _alive(p):
                out.append(p)
        except (ProcessLookupError, PermissionError, psutil.Error, OSError):
            continue
    return out


def _plausible_id(n: object) -> bool:
    """A pid or group number that can be a run's: a whole number above 1 (0 and negatives mean "my own
    group" or "every process" to kill(2); 1 is init, whose descendants are every process)."""
    return isinstance(n, int) and not isinstance(n, bool) and n > 1


def _is_supervisor_of(p: psutil.Process, run_dir: str) -> bool:
    """True when ``p`` runs ``python -m hipwizard.train.supervise RUN_DIR -- ...`` for this run directory:
    the marker of a run launched before the environment marker existed."""
    try:
        argv = p.cmdline()
    except (psutil.Error, OSError):
        return False
    for i, arg in enumerate(argv[:-1]):
        if arg == "hipwizard.train.supervise":
            try:
                return os.path.realpath(argv[i + 1]) == os.path.realpath(run_dir)
            except (OSError, ValueError):
                return False
    return False


def leader(manifest: RunManifest) -> psutil.Process | None:
    """The run's supervisor, if it is alive and provably ours: the create time recorded at launch and the
    run's marker, in its environment (``HIPWIZARD_RUN``) or, for a run launched before that existed, its
    command line (the supervisor of this run directory). A create time alone is not proof: a run.json
    edited to name another process (pid 1 and the boot time) would hand every process on the machine to
    the stop."""
    if not manifest.pid_create_time or not _plausible_id(manifest.pid):
        return None  # nothing to tell our process from a recycled pid: never assume
    try:
        p = psutil.Process(manifest.pid)
        if abs(p.create_time() - manifest.pid_create_time) > 1.0:
            return None
        if manifest.run_token:
            if not marked(p, manifest.run_token):
                return None
        elif not _is_supervisor_of(p, manifest.run_dir):
            return None
        return p if _alive(p) else None
    except (psutil.Error, TypeError, ValueError):
        return None


def group_members(manifest: RunManifest) -> list[psutil.Process]:
    """The live members of the run's process group that are provably the run's: each carries the run's
    marker, or (a run recorded without one) the group's leader is the run's verified supervisor. A group
    number reused by someone else after the run ended gives nothing."""
    if not _plausible_id(manifest.pgid):
        return []
    members = _group(manifest.pgid)
    if manifest.run_token:
        return [p for p in members if marked(p, manifest.run_token)]
    if manifest.pgid == manifest.pid and leader(manifest) is not None:
        return members  # while our leader lives, its group number cannot have been reused
    return []


def group_is_ours(manifest: RunManifest) -> bool:
    """True when the whole process group ``manifest.pgid`` is the run's (a leader and members that
    match it), so that signalling the group reaches no one else."""
    if not _plausible_id(manifest.pgid):
        return False  # killpg(0) is the caller's own group; 1 and below are never a run's
    members = _group(manifest.pgid)
    if not members:
        return False
    ours = {p.pid for p in group_members(manifest)}
    lead = leader(manifest)
    if lead is not None:
        try:
            ours |= {c.pid for c in lead.children(recursive=True)}
        except psutil.Error:
            pass
        ours.add(lead.pid)
    return all(p.pid in ours for p in members)


def run_processes(manifest: RunManifest, seen: dict[int, psutil.Process] | None = None) -> dict[int, psutil.Process]:
    """Every live process of the run: the verified leader and its descendants, the group's members that
    carry the run's marker, and those seen before (psutil tells a recycled pid from the one seen)."""
    procs: dict[int, psutil.Process] = {}
    lead = leader(manifest)
    candidates = list(seen.values()) if seen else []
    if lead is not None:
        candidates.append(lead)
        try:
            candidates += lead.children(recursive=True)
        except psutil.Error:
            pass
    # Always scan the group: when the supervisor is gone, its orphans are found only this way.
    candidates += group_members(manifest)
    for p in candidates:
        if _alive(p):
            procs[p.pid] = p
    return procs


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def trainer_processes(procs: dict[int, psutil.Process]) -> list[psutil.Process]:
    """The processes running LLaMA-Factory's training loop: llamafactory in the command line and no
    llamafactory descendant (so torchrun and the CLI wrapper above the workers are skipped)."""
    lf = {pid: p for pid, p in procs.items() if "llamafactory" in _cmdline(p) and "hipwizard.train.supervise" not in _cmdline(p)}
    out = []
    for p in lf.values():
        try:
            kids = {c.pid for c in p.children(recursive=True)}
        except psutil.Error:
            kids = set()
        if not kids & set(lf):
            out.append(p)
    return out


def _signal_all(procs, sig) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def _wait_gone(manifest: RunManifest, seen: dict[int, psutil.Process], timeout: float, poll: float,
               watch: list[psutil.Process] | None = None) -> dict[int, psutil.Process]:
    """Wait until no process of the run lives (or, with ``watch``, until none of those lives)."""
    deadline = time.monotonic() + timeout
    while True:
        seen.update(run_processes(manifest, seen))
        live = {pid: p for pid, p in seen.items() if _alive(p)}
        if not live or time.monotonic() >= deadline:
            return live
        if watch is not None and not any(_alive(p) for p in watch):
            return live
        time.sleep(poll)


def kill_group(pgid: int) -> None:
    """SIGKILL to a group just started by this process (a launch that could not be recorded)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_run(manifest: RunManifest, *, grace_s: float = 60.0, term_s: float = 15.0, poll: float = 0.2) -> StopResult:
    """Stop the run of ``manifest`` and verify nothing of it survives. Safe on a finished run."""
    start = time.monotonic()
    result = StopResult()
    seen = run_processes(manifest)
    if not seen:
        result.was_running = False
        return result
    try:
        atomic_write_text(Path(manifest.run_dir) / STOP_MARK, _now() + "\n")  # replaces a link, never writes through it
    except OSError:
        pass  # a read-only run dir must not prevent stopping
    trainers = trainer_processes(seen)
    if trainers and grace_s > 0:
        _signal_all(trainers, signal.SIGABRT)
        result.steps.append(f"SIGABRT to trainer pid {', '.join(str(p.pid) for p in trainers)} (graceful: save and stop)")
        # The grace is for the trainers to save. Once they have all exited, whatever is left (torchrun's
        # agent in its exit barrier waits up to 300 s for the other nodes) has nothing to save.
        live = _wait_gone(manifest, seen, grace_s, poll, watch=trainers)
        if live:
            live = _wait_gone(manifest, seen, min(AFTER_TRAINERS_S, grace_s), poll)
    else:
        live = {pid: p for pid, p in seen.items() if _alive(p)}
    if live:
        _killpg(manifest, signal.SIGTERM)
        _signal_all(live.values(), signal.SIGTERM)
        result.steps.append("SIGTERM to the process group")
        live = _wait_gone(manifest, seen, term_s, poll)
    if live:
        _killpg(manifest, signal.SIGKILL)
        _signal_all(live.values(), signal.SIGKILL)
        result.steps.append("SIGKILL to the process group and every descendant")
        live = _wait_gone(manifest, seen, 5.0, poll)
    result.survivors = sorted(live)
    result.elapsed_s = time.monotonic() - start
    if read_exit(manifest.run_dir) is None:
        # The supervisor was killed before it could record the end: record it here.
        try:
            write_exit(manifest.run_dir, returncode=None, ended=_now(), stopped=True, steps=result.steps)
        except OSError:
            pass
    return result


def _killpg(manifest: RunManifest, sig: int) -> None:
    """Signal the run's group only when every member of it is the run's (checked right before)."""
    if not group_is_ours(manifest):
        return
    try:
        os.killpg(manifest.pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
