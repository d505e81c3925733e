"""The supervisor's work: run the trainer, watch it for stalls, capture incidents, resume when asked.

``supervise`` (the session leader of a launched run, alive as long as the run) calls ``Supervision.run``:

1. start the command (the trainer) in the supervisor's process group;
2. a watchdog thread reads trainer_log.jsonl as it grows and keeps the wall-clock gaps between records
   (``stall.StallClock``); when no record came for max(k x median gap, floor) while the trainer lives, it writes
   ``stall.json`` (the run is "stalled" for ``runs``, ``attach`` and the Run view) and captures the incident once
   (``incident.capture``: stacks, GPU state, kernel log, NCCL lines, classification). Steps coming again clear
   the stall;
3. when the trainer exits with an error and nothing was captured yet, capture then (no stacks: it is gone);
4. with ``auto_resume`` attempts left (run.json, opt-in) after a crash or a stall, kill what is left of the
   attempt (the supervisor's own descendants: provably the run's), and start the command again from the
   newest complete checkpoint (``resume``), recording each attempt in attempts.json. A stop asked by the user
   (its mark) is never resumed.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from hipwizard.train.run.incident import ATTEMPT_MARK, amend, capture, set_aside
from hipwizard.train.run.manifest import STOP_NAME, RunManifest, load_manifest
from hipwizard.train.run.resume import Attempt, add_attempt, end_attempt, newest_checkpoint, resume_arguments
from hipwizard.train.run.stall import StallClock, StallPolicy, clear_stall, write_stall
from hipwizard.train.run.tail import TrainerLogTail

MANIFEST_WAIT_S = 30.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Supervision:
    def __init__(self, run_dir: str, command: list[str]) -> None:
        self.run_dir = Path(run_dir)
        self.command = command
        self.child: subprocess.Popen | None = None
        self.stalled = False
        self.captured = False
        self.lock = threading.Lock()
        self.start_error = ""

    def _manifest(self, done: threading.Event) -> RunManifest | None:
        deadline = time.monotonic() + MANIFEST_WAIT_S
        while not done.is_set() and time.monotonic() < deadline:
            m = load_manifest(self.run_dir)
            if m is not None:
                return m
            done.wait(0.1)
        return load_manifest(self.run_dir)

    def run(self) -> int:
        manifest = None
        extra: list[str] = []
        attempt = 1
        while True:
            self.stalled = self.captured = False
            try:
                self.child = subprocess.Popen(self.command + extra, stdin=subprocess.DEVNULL,
                                              preexec_fn=_default_signals)
            except OSError as exc:
                print(f"hipwizard: cannot start {self.command[0]}: {exc}", flush=True)
                self.start_error = str(exc)
                return 127
            done = threading.Event()
            watcher = threading.Thread(target=self._watch, args=(done, attempt), daemon=True, name="hipwizard-watchdog")
            watcher.start()
            rc = self.child.wait()
            done.set()
            watcher.join(timeout=120)
            manifest = manifest or load_manifest(self.run_dir)
            if manifest is not None and attempt == 1:
                attempt = manifest.attempt
            user_stop = (self.run_dir / STOP_NAME).exists()
            outcome = "finished" if rc == 0 else ("stopped" if user_stop else ("stalled" if self.stalled else "failed"))
            if rc != 0 and not user_stop and manifest is not None:
                if not self.captured:
                    self._capture(manifest, f"exit code {rc}", attempt, returncode=rc)
                elif self.stalled:
                    self._amend(manifest, rc)
            clear_stall(self.run_dir)
            try:
                end_attempt(self.run_dir, attempt, ended=_now(), returncode=rc, outcome=outcome)
            except OSError:
                pass
            if rc == 0 or user_stop or manifest is None or attempt - manifest.attempt >= manifest.auto_resume:
                return rc
            ckpt = newest_checkpoint(manifest.output_dir)
            if ckpt is None:
                print("hipwizard: no complete checkpoint to resume from: not resuming", flush=True)
                return rc
            set_aside(self.run_dir, attempt)
            attempt += 1
            print(f"\n{ATTEMPT_MARK}{attempt}: resuming from {ckpt.path.name} after the run {outcome} "
                  f"(auto-resume, {manifest.auto_resume - (attempt - manifest.attempt)} more allowed)", flush=True)
            try:
                add_attempt(self.run_dir, Attempt(attempt, _now(), f"auto-resume after {outcome}", str(ckpt.path), ckpt.step))
            except OSError:
                pass
            extra = resume_arguments(ckpt)

    def _capture(self, manifest: RunManifest, trigger: str, attempt: int, *, stall: str = "",
                 returncode: int | None = None) -> None:
        with self.lock:
            if self.captured:
                return
            self.captured = True
        try:
            capture(manifest, trigger, attempt=attempt, stall=stall, returncode=returncode)
        except Exception as exc:  # the run must go on (and its exit be recorded) whatever the capture met
            print(f"hipwizard: the incident capture failed: {exc!r}", flush=True)

    def _amend(self, manifest: RunManifest, rc: int) -> None:
        try:
            amend(manifest, rc)
        except Exception as exc:  # as in _capture: the exit is recorded whatever happens here
            print(f"hipwizard: the incident could not be completed: {exc!r}", flush=True)

    def _watch(self, done: threading.Event, attempt: int) -> None:
        started = time.time()
        manifest = self._manifest(done)
        if manifest is None:
            return
        attempt = max(attempt, manifest.attempt)
        policy = StallPolicy.from_dict(manifest.stall)
        clock = StallClock(started, policy)
        tail = TrainerLogTail(manifest.trainer_log_path)
        tail.attach()  # what an earlier attempt logged is history, not a step of this one
        poll_s = min(2.0, max(0.2, policy.floor_s / 10))
        while not done.wait(poll_s):
            batch = tail.poll()
            now = time.time()
            if batch.records:
                step = next((r.get("current_steps") for r in reversed(batch.records)
                             if isinstance(r.get("current_steps"), int)), None)
                steps = sum(isinstance(r.get("current_steps"), int) for r in batch.records)
                clock.record(now, step, count=steps, within_s=poll_s)
                if self.stalled:
                    self.stalled = False
                    clear_stall(self.run_dir)
                    print(f"hipwizard: steps came again (step {step}): no longer stalled", flush=True)
            verdict = clock.verdict(now, _size(manifest.trainer_log_path))
            if verdict.stalled and not self.stalled:
                self.stalled = True
                try:
                    write_stall(self.run_dir, verdict)
                except OSError:
                    pass
                print(f"hipwizard: STALLED: {verdict.line()}", flush=True)
                self._capture(manifest, "stall", attempt, stall=verdict.line())
                if attempt - manifest.attempt < manifest.auto_resume:
                    self._end_attempt()
                    return

    def _end_attempt(self) -> None:
        """Kill what is left of a stalled attempt: every descendant of this supervisor (ours by birth)."""
        try:
            kids = psutil.Process().children(recursive=True)
        except psutil.Error:
            return
        for p in kids:
            try:
                p.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
