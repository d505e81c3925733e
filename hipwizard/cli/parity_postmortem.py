"""``hipwizard parity postmortem RUN_DIR [--step N]``: the batch of a run's alarm step, rebuilt exactly as its
trainer fed it, and Parity on it (forward and backward, this device against a float64 CPU reference)."""

from __future__ import annotations

import json
from pathlib import Path

from hipwizard import parity
from hipwizard.progress import terminal_progress
from hipwizard.workspace import Workspace

TOLERANCE_CHOICES = ("fp64", "fp32", "fp16", "bf16")


def add_postmortem(actions, workspace_args) -> None:
    p = actions.add_parser("postmortem", help="rebuild a training step's batch (default: the first NaN or grad "
                                              "spike) and compare the run's model on it, forward and backward")
    p.add_argument("run_dir", type=Path, help="the run folder (its config.yaml and logs)")
    p.add_argument("--step", type=int, help="the optimizer step (default: the run's first NaN/inf or grad spike)")
    p.add_argument("--dtype", choices=TOLERANCE_CHOICES, help="default: the run's (bf16/fp16 from its config)")
    p.add_argument("--device", default="auto", help="cpu, cuda (also ROCm/HIP) or auto (default)")
    p.add_argument("--rank", type=int, default=0,
                   help="a multi-process (DDP) run: whose micro-batches to rebuild (default 0; the world size is "
                        "read from the run)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    workspace_args(p)
    p.set_defaults(func=cmd_postmortem)


def cmd_postmortem(args) -> int:
    ws = Workspace.open(args.workspace)
    with terminal_progress() as progress:
        batch, outcome = parity.step_postmortem(ws, args.run_dir, step=args.step, dtype=args.dtype,
                                                device=args.device, rank=args.rank, progress=progress)
    comp = outcome.comparison
    if args.json:
        print(json.dumps({"batch": str(batch.path), "batch_meta": batch.meta, "report": str(outcome.report),
                          "comparison": comp.to_dict()}, indent=2))
        return outcome.exit_code
    m = batch.meta
    ranked = f", rank {m['rank']} of {m['world_size']}" if m.get("world_size", 1) > 1 else ""
    print(f"step {m['step']} of {m['run']}{ranked}: epoch {m['epoch'] + 1}, {len(m['micro_batches'])} micro-batch(es) of "
          f"{'+'.join(map(str, m['micro_batches']))} sequences, {m['tokens']} tokens (seed {m['seed']})")
    print(f"batch: {batch.path}")
    print(m["weights"])
    print(comp.headline())
    if comp.first_divergent:
        print(f"first divergent: {comp.first_divergent}")
    adapter = f" --adapter {m['adapter']}" if m.get("adapter") else ""
    print(f"on the reference machine: hipwizard parity capture --model MODEL{adapter} --inputs BATCH --backward "
          f"--dtype DTYPE --out ref.safetensors; then here: hipwizard parity compare ref.safetensors --model MODEL"
          f"{adapter}")
    return outcome.exit_code
