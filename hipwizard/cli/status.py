"""``hipwizard status [--workspace DIR]`` (or ``status DIR``): each step's status in the workspace, headless."""

from __future__ import annotations

import json

from hipwizard.cli.workspace_option import add_workspace_option, workspace_dir
from hipwizard.steps import STEPS
from hipwizard.textsafe import inert_line
from hipwizard.workspace import Workspace


def add_commands(sub) -> None:
    p = sub.add_parser("status", help="show each step's status in a workspace")
    add_workspace_option(p, positional=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_status)


def _status(args) -> int:
    ws = Workspace.open(workspace_dir(args), must_exist=True)
    rows = {spec.key: ws.step_status(spec.key) for spec in STEPS}
    nxt = ws.next_step()
    damaged = ws.damage
    if args.json:
        print(json.dumps({
            "workspace": str(ws.root), **({"error": damaged} if damaged else {}),
            "steps": {k: {"state": v.state, "summary": v.summary} for k, v in rows.items()},
            "next": nxt,
        }, indent=2))
        return 0
    print(f"workspace {inert_line(ws.root)}")  # a folder name may hold a newline: one line stays one line
    if damaged:
        print(f"  ⚠ {inert_line(damaged)}")
    for spec in STEPS:
        st = rows[spec.key]
        print(f"  {st.symbol} {spec.number} {spec.key:<7} {st.state:<12} {inert_line(st.summary)}")
    print(f"next: {nxt}" if nxt else "all steps done")
    return 0
