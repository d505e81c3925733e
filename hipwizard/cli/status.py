"""``hipwizard status [DIR]``: each step's status in the workspace, headless."""

from __future__ import annotations

import json

from hipwizard.steps import STEP_KEYS
from hipwizard.workspace import Workspace


def add_commands(sub) -> None:
    p = sub.add_parser("status", help="show each step's status in a workspace")
    p.add_argument("dir", nargs="?", default=".", help="workspace folder (default: current)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_status)


def _status(args) -> int:
    ws = Workspace.open(args.dir)
    rows = {step: ws.step_status(step) for step in STEP_KEYS}
    nxt = ws.next_step()
    if args.json:
        print(json.dumps({
            "workspace": str(ws.root),
            "steps": {k: {"state": v.state, "summary": v.summary} for k, v in rows.items()},
            "next": nxt,
        }, indent=2))
        return 0
    print(f"workspace {ws.root}")
    for i, (step, st) in enumerate(rows.items(), 1):
        print(f"  {st.symbol} {i} {step:<7} {st.state:<12} {st.summary}")
    print(f"next: {nxt}" if nxt else "all steps done")
    return 0
