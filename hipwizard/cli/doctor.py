"""``hipwizard doctor [--json] [--replay DIR] [--record DIR] [--timeout S] [--workspace DIR] [--quiet]``.

While the tools are probed, progress goes to stderr (also with --json, whose document is on stdout): one
self-overwriting line on a terminal, else a line per tool as it answers; --quiet shows none.
Exit code: 0 when no check fails, 1 when a check fails, 2 on bad input (never a traceback).
The report is saved in the workspace (``.hipwizard/doctor.json``) so the app shows the step's status.
"""

from __future__ import annotations

import json
import sys

from hipwizard import doctor
from hipwizard.cli import doctor_preflight
from hipwizard.cli.workspace_option import add_workspace_option
from hipwizard.errors import UserError
from hipwizard.progress import terminal_progress
from hipwizard.textsafe import inert_line
from hipwizard.workspace import Workspace


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
    mode.add_argument("--paste", metavar="FILE", help="a pasted terminal log (any number of command outputs, prompts "
                      "or not; '-' reads stdin): split, recognised, saved as a recording (--record DIR, default "
                      "in the workspace), then checked")
    p.add_argument("--record", metavar="DIR", help="also save every tool output into DIR (for support)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="seconds each tool may take before it counts as hung (default 30; the Python probe gets 3x)")
    add_workspace_option(p, ", where the report is saved")
    p.add_argument("--no-save", action="store_true", help="do not save the report in the workspace")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress on stderr while the tools are probed (shown by default, also with --json)")
    p.set_defaults(func=run_doctor)
    doctor_preflight.add_commands(sub)  # ``hipwizard preflight``: the multi-GPU part of the doctor


def run_doctor(args) -> int:
    # ``doctor.<name>``: the door's services load on first use, not when the CLI starts
    timeout = doctor.DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not timeout > 0:
        raise UserError("--timeout must be a positive number of seconds")
    if args.replay and args.record:
        raise UserError("--replay and --record cannot be used together")
    ws = None if args.no_save else Workspace.open(args.workspace)
    if args.paste:
        paste = doctor.read_paste(args.paste, getattr(sys.stdin, "buffer", sys.stdin))
        source = doctor.paste_source(paste.text, paste.label, args.record, ws, note=paste.note)
    else:
        source = doctor.open_source(replay=args.replay, record=args.record)
    if source.paste_summary:
        print(f"hipwizard: {inert_line(source.paste_summary)}", file=sys.stderr)
    if source.note:
        print(f"hipwizard: warning: {inert_line(source.note)}", file=sys.stderr)
    with terminal_progress() as progress:
        if args.quiet:
            progress = None
        elif progress is None and not (args.replay or args.paste):  # a log or a pipe: one line per answer
            progress = _line_progress(timeout)
        result = doctor.diagnose(ws, source, timeout=timeout, progress=progress)
    report = result.report
    if result.save_error:
        print(f"hipwizard: warning: report not saved in the workspace: {inert_line(result.save_error)}",
              file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        sys.stdout.write(doctor.render_text(report))
        if source.record_dir is not None:
            print(f"recorded every tool output in {source.record_dir} — attach that folder to a support ticket")
    return 1 if report.failed else 0


def _line_progress(timeout: float):
    """Progress for a stderr that is not a terminal (a log, CI, ``2>&1 | tee``): a line when probing starts
    and one per tool as it answers, so a doctor waiting on a slow tool is never silent for seconds."""
    print(f"hipwizard: probing {len(doctor.default_probes())} tools (each may take up to {timeout:g} s; --quiet hides "
          "this) ...", file=sys.stderr, flush=True)

    def report(p) -> None:
        print(f"hipwizard: {p.stage} {p.done}/{p.total}: {inert_line(p.item)} answered", file=sys.stderr, flush=True)

    return report
