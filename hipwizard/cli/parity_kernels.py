"""``hipwizard parity kernels spec|build|run``: parity for the user's own kernels.

``spec`` finds the original's ``__global__`` kernels, drafts a spec per kernel and writes the spec file (edit
it: a redraft keeps what you changed); ``build`` generates the drivers and compiles them (the original with nvcc,
the port with hipcc; compile only); ``run`` (on the NVIDIA reference machine) builds the original, its float64
twin and the port (through the reverse-mapping headers) and sweeps shapes x distributions. Exit 0 all well, 1 a
kernel failed (or a driver did not compile), 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from hipwizard import parity
from hipwizard.progress import terminal_progress
from hipwizard.textsafe import inert_line
from hipwizard.workspace import Workspace


def add_kernels(actions, workspace_args) -> None:
    p = actions.add_parser("kernels", help="the user's own kernels: draft specs, generate drivers, sweep and judge")
    p.add_argument("action", choices=("spec", "build", "run"),
                   help="spec: draft the spec file; build: compile the drivers; run: build and sweep (GPU)")
    p.add_argument("--original", type=Path, help="the CUDA tree (default: the workspace's port source)")
    p.add_argument("--port", type=Path, help="the port's output folder (default: the workspace's)")
    p.add_argument("--kernel", action="append", metavar="GLOB", help="only kernels matching (repeatable)")
    p.add_argument("--platform", choices=("amd", "nvidia"),
                   help="how the port is built: amd (hipcc; default for build) or nvidia (nvcc through the "
                        "reverse-mapping headers; default for run)")
    p.add_argument("--include", action="append", default=[], metavar="DIR", help="an extra include folder")
    p.add_argument("--arch", help="the CUDA architecture for nvcc (default sm_90)")
    p.add_argument("--k", type=float, default=2.0, help="the triangle's factor (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated inputs (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    workspace_args(p)
    p.set_defaults(func=cmd_kernels)


def cmd_kernels(args) -> int:
    ws = Workspace.open(args.workspace)
    if args.action == "spec":
        report = parity.kernel_specs(ws, args.original, args.port, only=args.kernel)
    else:
        tc = parity.Toolchain(include_dirs=args.include, cuda_arch=args.arch or "sm_90")
        platform = args.platform or ("nvidia" if args.action == "run" else "amd")
        with terminal_progress() as progress:
            report = parity.kernel_run(ws, args.original, args.port, only=args.kernel, platform=platform,
                                       run=args.action == "run", tc=tc, seed=args.seed, k=args.k, progress=progress)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return report.exit_code
    print(f"original: {inert_line(report.original)}")
    print(f"port:     {inert_line(report.port or '(none)')}")
    print(f"specs:    {inert_line(report.spec_file)} (edit it; a redraft keeps your changes)")
    for r in report.rows:
        if not r.supported:
            state = f"✗ no driver: {r.why}"
        elif r.status:
            mark = {"pass": "✓", "fail": "✗", "original broken": "!"}.get(r.status, "·")
            state = f"{mark} {r.status} ({r.cases} cases)"
        elif r.original_built is not None:
            state = (f"{'✓' if r.original_built else '✗'} original driver  "
                     f"{'✓' if r.port_built else '✗'} port driver")
        else:
            state = f"· {r.buffers}"
        print(f"  {inert_line(r.file)}:{r.line} {inert_line(r.kernel)}  {state}")
        if r.first_failure:
            print(f"      first failure: {inert_line(r.first_failure)}")
        if r.minimal_case:
            print(f"      minimal case:  {inert_line(r.minimal_case)}")
        for check in r.checks:
            print(f"      sanitizer:     {inert_line(check)}")
    return report.exit_code
