"""``hipwizard doctor [--json] [--replay DIR] [--record DIR] [--timeout S] [--workspace DIR]``.

Exit code: 0 when no check fails, 1 when a check fails, 2 on bad input (never a traceback).
The report is saved in the workspace (``.hipwizard/doctor.json``) so the app shows the step's status.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hipwizard.errors import UserError


def add_commands(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine for an MI300X fine-tune (GPU, ROCm, driver, torch, DeepSpeed, ...)",
        description=(
            "Probe the GPU, ROCm, driver and Python stack, check them against hipwizard's compatibility matrix "
            "and say how to fix what fails. --record DIR saves every tool output (one text file per command) "
            "for a support ticket; --replay DIR runs the same checks on such a directory."
        ),
    )
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--replay", metavar="DIR", help="answer from recorded outputs instead of running tools")
    mode.add_argument("--record", metavar="DIR", help="also save every tool output into DIR (for support)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="seconds each tool may take before it counts as hung (default 30; the Python probe gets 3x)")
    p.add_argument("--workspace", metavar="DIR", default=".", help="workspace to save the report in (default: .)")
    p.add_argument("--no-save", action="store_true", help="do not save the report in the workspace")
    p.set_defaults(func=run_doctor)


def make_runner(replay: str | None, record: str | None):
    """The runner for a doctor run: replay, recording or live. Bad directories are a UserError."""
    from hipwizard.runner import SubprocessRunner

    if replay:
        from hipwizard.doctor.probes import default_probes
        from hipwizard.doctor.replay import ReplayRunner, slug

        path = Path(replay).expanduser()
        if not path.is_dir():
            raise UserError(f"--replay {replay}: not a directory")
        runner = ReplayRunner(path)
        wanted = {slug(p.argv) for p in default_probes()}
        if not runner.recorded_slugs() & wanted:
            raise UserError(f"--replay {replay}: no recorded outputs in it (expected files such as rocminfo.txt; "
                            "make one with `hipwizard doctor --record DIR`)")
        return runner, f"replay of {path.name}"
    if record:
        from hipwizard.doctor.replay import RecordingRunner

        path = Path(record).expanduser()
        if path.exists() and not path.is_dir():
            raise UserError(f"--record {record}: exists and is not a directory")
        if path.is_dir() and any(path.glob("*.txt")):
            raise UserError(f"--record {record}: already holds recordings; choose an empty or new directory")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--record {record}: cannot create it ({exc.strerror})") from None
        return RecordingRunner(SubprocessRunner(), path), "live"
    return SubprocessRunner(), "live"


def run_doctor(args) -> int:
    from hipwizard.doctor.probes import DEFAULT_TIMEOUT_S
    from hipwizard.doctor.report import diagnose, render_text
    from hipwizard.doctor.state import save_report
    from hipwizard.workspace import Workspace

    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not timeout > 0:
        raise UserError("--timeout must be a positive number of seconds")
    runner, origin = make_runner(args.replay, args.record)
    report = diagnose(runner, timeout=timeout, origin=origin)
    data = report.to_dict()
    if args.record:
        from hipwizard.atomic import atomic_write_json

        atomic_write_json(Path(args.record).expanduser() / "doctor-report.json", data)
    if not args.no_save:
        try:
            save_report(Workspace.open(args.workspace), report)
        except OSError as exc:
            print(f"hipwizard: warning: report not saved in the workspace: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(render_text(report))
        if args.record:
            print(f"recorded every tool output in {args.record} — attach that folder to a support ticket")
    return 1 if report.failed else 0
