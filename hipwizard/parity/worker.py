"""The torch side of the dashboard, run as a subprocess: ``python -m hipwizard.parity.worker ACTION ...``.

Takes exactly the arguments of ``hipwizard parity ACTION`` and reports on stdout as JSON lines::

    {"event": "progress", "stage": "forward", "done": 3, "total": 6}
    {"event": "result", "kind": "comparison", "exit": 0, "report": "...", "comparison": {...}}
    {"event": "error", "message": "one clear line", "exit": 2}

The UI process never imports torch; this process does, and dies with its memory when the job ends.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from hipwizard.errors import UserError
from hipwizard.cli.parity import Reporter, add_actions


def main(argv: list[str] | None = None) -> int:
    # Third-party progress bars and warnings would interleave with our JSON lines on stdout.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    reporter = Reporter(json_lines=True)
    parser = argparse.ArgumentParser(prog="python -m hipwizard.parity.worker")
    add_actions(parser.add_subparsers(dest="parity_command", metavar="ACTION", required=True))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed why on stderr
        reporter.event("error", message="bad worker arguments (see stderr)", exit=2)
        return int(exc.code or 2)
    stdout = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to stderr; our events keep the real stdout
    try:
        reporter_out = _StdoutReporter(stdout)
        return int(args.func(args, reporter_out) or 0)
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


class _StdoutReporter(Reporter):
    def __init__(self, stream):
        super().__init__(json_lines=True)
        self.stream = stream

    def event(self, name: str, **data) -> None:
        _emit(self.stream, name, **data)


def _emit(stream, name: str, **data) -> None:
    import json

    stream.write(json.dumps({"event": name, **data}, default=str) + "\n")
    stream.flush()


if __name__ == "__main__":
    sys.exit(main())
