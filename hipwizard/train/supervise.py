"""``python -m hipwizard.train.supervise RUN_DIR -- CMD...``: the session leader of a launched run.

It starts CMD in its own process group (inheriting the log file as stdout/stderr), ignores SIGINT,
SIGTERM and SIGHUP itself (so a graceful stop reaches the trainer and the supervisor lives to record
how it ended), watches it for stalls and failures (``run.watchdog``: incident capture, opt-in auto-resume),
waits, and writes ``exit.json`` with the exit code. Standard library only: it must start
fast and never import the heavy stack.
"""

from __future__ import annotations

import signal
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
    # deferred on purpose: after the signals are ignored
    from hipwizard.train.run.manifest import write_exit
    from hipwizard.train.run.watchdog import Supervision

    start = time.time()
    # The trainer runs with the signals at their defaults (restore_signals only covers SIGPIPE & co.), so it
    # still gets SIGINT/SIGTERM from a stop; the watchdog thread catches stalls and captures incidents.
    supervision = Supervision(run_dir, cmd)
    rc = supervision.run()
    if supervision.start_error and supervision.child is None:
        write_exit(run_dir, returncode=127, ended=_now(), duration_s=0.0, stopped=False, error=supervision.start_error)
        return 127
    write_exit(run_dir, returncode=rc, ended=_now(), duration_s=round(time.time() - start, 3), stopped=False,
               child_pid=supervision.child.pid if supervision.child else None)
    return 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main())
