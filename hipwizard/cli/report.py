"""``hipwizard report`` (one document of the migration) and ``hipwizard env`` (environment fingerprints).

``hipwizard report [--workspace DIR] --out FILE.html|FILE.md [--full] [--demo]``: every step's results in the workspace,
each stamped with the environment it came from. ``--demo`` first runs whatever step the demo workspace has
not run yet (doctor, port, parity, a short training run), so the report of the embedded demo is full.
``hipwizard env [ARTEFACT [ARTEFACT]]``: this workspace's fingerprint, the one stamped on an artefact (a review
state, an output folder, a parity report, a run folder), or what differs between two artefacts' environments.
"""

from __future__ import annotations

import json

from hipwizard.cli.workspace_option import add_workspace_option, workspace_dir
from hipwizard.errors import UserError

REPORT_HELP = ("Export every step's results in the workspace as one document, each stamped with the environment "
               "it came from: FILE.html (self-contained, opens with no network) or FILE.md (charts as SVG files "
               "beside it). --demo first runs the steps the demo workspace has not run yet.")
ENV_HELP = ("Show this workspace's environment fingerprint (from the doctor's report), the one stamped on an "
            "artefact (review state, output folder, parity report, run folder), or what differs between two.")


def add_commands(sub) -> None:
    p = sub.add_parser("report", help="export the migration as one HTML or Markdown document",
                       description=REPORT_HELP)
    add_workspace_option(p, positional=True)
    p.add_argument("--out", help="FILE.html (one self-contained file) or FILE.md (charts as SVG files beside "
                                 "it); default: hipwizard-report.html in the workspace")
    p.add_argument("--full", action="store_true", help="include full paths and the runs' environment variables")
    p.add_argument("--force", action="store_true",
                   help="replace a report file there that hipwizard did not write last (e.g. edited by hand)")
    p.add_argument("--demo", action="store_true",
                   help="the embedded demo workspace (DIR when given), with every step run first")
    p.set_defaults(func=_report)
    e = sub.add_parser("env", help="show or compare the environment stamped on artefacts",
                       description=ENV_HELP)
    e.add_argument("artefacts", nargs="*", metavar="ARTEFACT", help="zero, one or two artefacts")
    add_workspace_option(e, " whose fingerprint to show")
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.set_defaults(func=_env)


def _report(args) -> int:
    from hipwizard.report import make_report
    from hipwizard.workspace import Workspace

    if args.demo:
        from hipwizard.demo_workspace import open_demo_workspace
        from hipwizard.progress import terminal_progress
        from hipwizard.report.demo import fill

        ws = open_demo_workspace(workspace_dir(args) if (args.dir or args.workspace) else None).workspace
        with terminal_progress() as progress:
            fill(ws, progress=progress)
    else:
        ws = Workspace.open(workspace_dir(args), must_exist=True)
    out = args.out or str(ws.root / "hipwizard-report.html")
    written = make_report(ws, out, full=args.full, force=args.force)
    print(f"✔ report written: {written[0]}" + (f" (+{len(written) - 1} chart files beside it)" if len(written) > 1 else ""))
    return 0


def _env(args) -> int:
    from hipwizard.doctor import STAMP_LABELS, describe_stamp, environment_stamp, read_stamp, stamp_differences
    from hipwizard.workspace import Workspace

    if len(args.artefacts) > 2:
        raise UserError("env takes at most two artefacts to compare")
    stamps = []
    for a in args.artefacts:
        try:
            stamps.append(read_stamp(a))
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if not stamps:
        stamps = [environment_stamp(Workspace.open(args.workspace))]
    if len(stamps) == 1:
        if args.json:
            print(json.dumps(stamps[0], indent=2))
        else:
            print(describe_stamp(stamps[0]))
            for key, label in STAMP_LABELS.items():
                if stamps[0].get(key) not in (None, ""):
                    print(f"  {label:<20} {stamps[0][key]}")
            for name, v in (stamps[0].get("packages") or {}).items():
                print(f"  {name:<20} {v}")
        return 0
    rows = stamp_differences(*stamps)
    if args.json:
        print(json.dumps({"a": stamps[0], "b": stamps[1], "differs": [{"field": f, "a": a, "b": b} for f, a, b in rows]},
                         indent=2))
        return 0
    if not rows:
        print(f"= same environment ({stamps[0].get('id')})")
        return 0
    print(f"≠ {len(rows)} difference(s) between env {stamps[0].get('id')} and env {stamps[1].get('id')}:")
    width = max(len(f) for f, _, _ in rows)
    for f, a, b in rows:
        print(f"  {f:<{width}}  {a}  →  {b}")
    return 0
