"""``services.compare`` in a subprocess, for the dashboard: ``python -m hipwizard.parity.worker REQUEST_JSON``.

The UI process never imports torch; this process does, and dies with its memory when the job ends.
``REQUEST_JSON`` is ``{"request": CompareRequest.to_dict(), "workspace": DIR or null}``. The worker reports on
stdout, one JSON object a line::

    {"event": "progress", "stage": "forward", "done": 3, "total": 6, "item": "model.layers.1.self_attn"}
    {"event": "result", "outcome": CompareOutcome.to_dict()}
    {"event": "error", "message": "one clear line", "exit": 2}

``WorkerRun`` is the other end, in the UI process: it starts the worker, turns its progress lines back into
``Progress`` values and returns the ``CompareOutcome`` (or raises ``UserError`` with the worker's line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING

from hipwizard.errors import UserError
from hipwizard.parity.requests import CompareRequest
from hipwizard.progress import Progress, ProgressFn, quiet

if TYPE_CHECKING:
    from hipwizard.parity.services import CompareOutcome


class WorkerRun:
    """One comparison in a worker subprocess: ``run`` blocks (call it in a thread), ``stop`` kills it."""

    def __init__(self, request: CompareRequest, workspace: Path | None, *, cwd: Path | None = None):
        self.payload = json.dumps({"request": request.to_dict(), "workspace": str(workspace) if workspace else None})
        self.cwd = cwd
        self._proc: subprocess.Popen | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    def run(self, progress: ProgressFn | None = None) -> CompareOutcome:
        """Start the worker and wait for its outcome (a ``services.CompareOutcome``); UserError with the
        worker's one line when it fails, and when it was stopped."""
        from hipwizard.parity.services import CompareOutcome

        with tempfile.TemporaryFile() as err:
            with self._lock:
                if self._stopped.is_set():
                    raise UserError("the comparison was stopped")
                self._proc = proc = subprocess.Popen(
                    [sys.executable, "-m", "hipwizard.parity.worker", self.payload], stdout=subprocess.PIPE,
                    stderr=err, stdin=subprocess.DEVNULL, cwd=self.cwd, text=True,
                )
            try:
                result = self._read_events(proc.stdout, progress or quiet)
                proc.wait()
            finally:
                if proc.poll() is None:  # the reader failed: leave no orphan computing unseen
                    proc.kill()
                    proc.wait()
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
        if self._stopped.is_set():
            raise UserError("the comparison was stopped")
        if result is None:
            raise UserError(f"the parity worker stopped without a result: {' '.join(tail) or f'exit {proc.returncode}'}")
        if result.get("event") == "error":
            raise UserError(str(result.get("message") or "the parity worker failed"))
        return CompareOutcome.from_dict(result["outcome"])

    def stop(self) -> None:
        """Kill the worker (from any thread, before or while it runs); ``run`` then raises 'stopped'."""
        with self._lock:
            self._stopped.set()
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()

    @staticmethod
    def _read_events(stream: IO[str] | None, progress: ProgressFn) -> dict | None:
        result = None
        for line in stream or ():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not ours: a library printed on stdout before we took it over
            if event.get("event") == "progress":
                progress(Progress(str(event.get("stage", "")), event.get("done"), event.get("total"),
                                  str(event.get("item") or "")))
            elif event.get("event") in ("result", "error"):
                result = event
        return result


def main(argv: list[str] | None = None) -> int:
    # Third-party progress bars and warnings would interleave with our JSON lines on stdout.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    stdout = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to stderr; our events keep the real stdout
    try:
        return _serve(sys.argv[1:] if argv is None else argv, stdout)
    except UserError as exc:
        _emit(stdout, "error", message=str(exc), exit=2)
        return 2
    except KeyboardInterrupt:
        _emit(stdout, "error", message="interrupted", exit=130)
        return 130
    except Exception as exc:  # the UI must get one line, never a silent death
        traceback.print_exc(file=sys.stderr)
        _emit(stdout, "error", message=f"internal error: {type(exc).__name__}: {exc}", exit=3)
        return 3
    finally:
        sys.stdout = stdout


def _serve(argv: list[str], stdout: IO[str]) -> int:
    from hipwizard.parity import services
    from hipwizard.workspace import Workspace

    if len(argv) != 1:
        raise UserError("usage: python -m hipwizard.parity.worker REQUEST_JSON")
    try:
        payload = json.loads(argv[0])
        request = CompareRequest.from_dict(payload["request"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"bad worker request: {exc}") from None
    ws = Workspace.open(payload["workspace"]) if payload.get("workspace") else None

    def progress(p: Progress) -> None:
        _emit(stdout, "progress", stage=p.stage, done=p.done, total=p.total, item=p.item)

    outcome = services.compare(request, ws=ws, progress=progress)
    _emit(stdout, "result", outcome=outcome.to_dict())
    return outcome.exit_code


def _emit(stream: IO[str], name: str, **data) -> None:
    stream.write(json.dumps({"event": name, **data}, default=str) + "\n")
    stream.flush()


if __name__ == "__main__":
    sys.exit(main())
