"""One protocol for work that runs out of the UI process (torch, LLaMA-Factory, matplotlib load there and die
with it): ``python -m hipwizard.<step>.worker REQUEST_JSON``. The worker answers on stdout, one JSON object a
line (anything a library prints goes to stderr)::

    {"event": "progress", "stage": "forward", "done": 3, "total": 6, "item": "model.layers.1.self_attn"}
    {"event": "result", ...the job's fields...}
    {"event": "error", "message": "one clear line", "exit": 2}

``serve(handler)`` is the worker's side: it reads the request, calls ``handler(request, progress)`` and writes
the events (a ``UserError`` is an error event with its line, any other exception one naming the bug). ``Job``
is the caller's side: it starts the worker, turns progress lines back into ``Progress`` values and returns the
result's fields, or raises ``UserError`` with the worker's line. Nobody builds a command line or reads a
command's stderr to learn what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn, quiet

Handler = Callable[[dict[str, Any], ProgressFn], dict[str, Any]]


class Job:
    """One job in a worker subprocess: ``run`` blocks (call it in a thread), ``stop`` kills it."""

    def __init__(self, module: str, request: dict[str, Any], *, what: str = "job", cwd: Path | None = None,
                 timeout_s: float | None = None) -> None:
        self.module, self.what, self.cwd, self.timeout_s = module, what, cwd, timeout_s
        self.payload = json.dumps(request, default=str)
        self._proc: subprocess.Popen | None = None
        self._stopped = threading.Event()
        self._timed_out = threading.Event()
        self._lock = threading.Lock()

    def run(self, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Start the worker and wait for its result's fields; ``UserError`` with the worker's line when it
        fails, and when it was stopped or ran past ``timeout_s``."""
        with tempfile.TemporaryFile() as err:
            with self._lock:
                if self._stopped.is_set():
                    raise UserError(f"the {self.what} was stopped")
                self._proc = proc = subprocess.Popen(
                    [sys.executable, "-m", self.module, self.payload], stdout=subprocess.PIPE, stderr=err,
                    stdin=subprocess.DEVNULL, cwd=self.cwd, text=True)
            timer = threading.Timer(self.timeout_s, self._time_out) if self.timeout_s else None
            if timer:
                timer.daemon = True
                timer.start()
            try:
                event = read_events(proc.stdout, progress or quiet)
                proc.wait()
            finally:
                if timer:
                    timer.cancel()
                if proc.poll() is None:  # the reader failed: leave no orphan computing unseen
                    proc.kill()
                    proc.wait()
            err.seek(0)
            died = err.read().decode(errors="replace").strip().splitlines()[-1:]  # only for a worker that died
        if self._timed_out.is_set():
            raise UserError(f"the {self.what} took over {self.timeout_s:g} s and was stopped")
        if self._stopped.is_set():
            raise UserError(f"the {self.what} was stopped")
        if event is None:
            raise UserError(f"the {self.what} stopped without a result: {' '.join(died) or f'exit {proc.returncode}'}")
        if event.get("event") == "error":
            raise UserError(str(event.get("message") or f"the {self.what} failed"))
        return {k: v for k, v in event.items() if k != "event"}

    @property
    def process(self) -> subprocess.Popen | None:
        """The worker process once started (its ``returncode`` says how it ended)."""
        return self._proc

    def stop(self) -> None:
        """Kill the worker (from any thread, before or while it runs); ``run`` then raises 'stopped'."""
        with self._lock:
            self._stopped.set()
            self._kill()

    def _time_out(self) -> None:
        with self._lock:
            self._timed_out.set()
            self._kill()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()


def run_job(module: str, request: dict[str, Any], *, what: str = "job", progress: ProgressFn | None = None,
            cwd: Path | None = None, timeout_s: float | None = None) -> dict[str, Any]:
    """``Job(...).run(progress)`` in one call."""
    return Job(module, request, what=what, cwd=cwd, timeout_s=timeout_s).run(progress)


def read_events(stream: IO[str] | None, progress: ProgressFn) -> dict[str, Any] | None:
    """Feed progress events to ``progress``; the last result or error event (None when there was none)."""
    result = None
    for line in stream or ():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # not ours: a library printed on stdout before the worker took it over
        if not isinstance(event, dict):
            continue
        if event.get("event") == "progress":
            progress(Progress(str(event.get("stage", "")), event.get("done"), event.get("total"),
                              str(event.get("item") or "")))
        elif event.get("event") in ("result", "error"):
            result = event
    return result


def serve(handler: Handler, argv: list[str] | None = None, *, usage: str = "python -m MODULE REQUEST_JSON") -> int:
    """The worker's main: one request (a JSON object) in ``argv``, events out on stdout. Returns the exit
    status: the result's ``exit`` field (default 0), 2 for a ``UserError``, 130 interrupted, 3 a bug."""
    # Third-party progress bars and warnings would interleave with our JSON lines on stdout.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    argv = sys.argv[1:] if argv is None else argv
    stdout = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to stderr; our events keep the real stdout

    def progress(p: Progress) -> None:
        emit(stdout, "progress", stage=p.stage, done=p.done, total=p.total, item=p.item)

    try:
        if len(argv) != 1:
            raise UserError(f"usage: {usage}")
        try:
            request = json.loads(argv[0])
        except ValueError as exc:
            raise UserError(f"bad worker request: {exc}") from None
        if not isinstance(request, dict):
            raise UserError("bad worker request: not a JSON object")
        result = handler(request, progress)
        emit(stdout, "result", **result)
        code = result.get("exit", 0)
        return code if isinstance(code, int) else 0
    except UserError as exc:
        emit(stdout, "error", message=str(exc), exit=2)
        return 2
    except KeyboardInterrupt:
        emit(stdout, "error", message="interrupted", exit=130)
        return 130
    except Exception as exc:  # the UI must get one line, never a silent death
        traceback.print_exc(file=sys.stderr)
        emit(stdout, "error", message=f"internal error: {type(exc).__name__}: {exc}", exit=3)
        return 3
    finally:
        sys.stdout = stdout


def emit(stream: IO[str], name: str, **data: Any) -> None:
    stream.write(json.dumps({"event": name, **data}, default=str) + "\n")
    stream.flush()
