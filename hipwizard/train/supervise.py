"""``python -m hipwizard.train.supervise RUN_DIR -- CMD...``: the session leader of a launched run.

It starts CMD in its own process group (inheriting the log file as stdout/stderr), ignores SIGINT,
SIGTERM and SIGHUP itself (so a graceful stop reaches the trainer and the supervisor lives to record
how it ended), waits, and writes ``exit.json`` with the exit code. Standard library only: it must start
fast and never import the heavy stack.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import datetime, timezone


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv or argv.index("--") != 1 or len(argv) < 3:
        print("usage: python -m hipwizard.train.supervise RUN_DIR -- CMD ...", file=sys.stderr)
        return 2
    run_dir, cmd = argv[0], argv[2:]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    from hipwizard.train.run.manifest import write_exit  # deferred on purpose: after the signals are ignored

    start = time.time()
    try:
        # Signals ignored here are reset to default in the child (restore_signals only covers
        # SIGPIPE & co.), so the trainer still gets SIGINT/SIGTERM from a stop.
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=_default_signals)
    except OSError as exc:
        print(f"hipwizard: cannot start {cmd[0]}: {exc}", flush=True)
        write_exit(run_dir, returncode=127, ended=_now(), duration_s=0.0, stopped=False, error=str(exc))
        return 127
    write_exit_pending = {"child_pid": child.pid}
    rc = child.wait()
    write_exit(run_dir, returncode=rc, ended=_now(), duration_s=round(time.time() - start, 3),
               stopped=False, **write_exit_pending)
    return 0


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main())
