"""``hipwizard preflight [FILE ...] [--live] [--json]``: the multi-GPU preflight of the doctor.

Reads rccl-tests, TransferBench and ``amd-smi topology`` / ``rocm-smi --showtopo`` outputs (recorded or pasted
into files; each is recognised by its content), and with ``--live`` asks this node; judges them against AMD's
published MI300X numbers, xGMI links, NCCL/RCCL variables and kernel settings. Exit code 0 when no check
fails, 1 when one does, 2 on bad input.
"""

from __future__ import annotations

import json

from hipwizard import doctor
from hipwizard.textsafe import inert_line


def add_commands(sub) -> None:
    p = sub.add_parser("preflight", help="judge a node's GPU interconnect before a multi-GPU run (rccl-tests, "
                       "TransferBench, topology)")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="outputs of all_reduce_perf, TransferBench p2p/a2a, amd-smi topology or rocm-smi --showtopo")
    p.add_argument("--live", action="store_true",
                   help="also ask this node: amd-smi/rocm-smi topology, TransferBench p2p, kernel command line, ACS")
    p.add_argument("--platform", choices=("MI300X",), help="whose published numbers apply (default: from the outputs)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_preflight)


def run_preflight(args) -> int:
    result = doctor.preflight(args.files, live=args.live, platform=args.platform)
    if args.json:
        print(json.dumps({"read": result.read, "notes": result.notes,
                          "checks": [{"id": c.id, "title": c.title, "status": c.status, "found": c.found,
                                      "why": c.why, "fix": c.fix} for c in result.checks]}, indent=2))
        return 1 if result.failed else 0
    for line in result.read:
        print(f"read {inert_line(line)}")
    for note in result.notes:
        print(f"note: {inert_line(note)}")
    for c in result.checks:
        print(f"{c.label:<8} {c.title}: {inert_line(c.found)}")
        if c.status != "ok" and c.fix:
            print(f"         fix: {c.fix}")
    return 1 if result.failed else 0
