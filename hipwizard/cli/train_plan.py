"""``hipwizard train plan`` and ``hipwizard train init``: the plan side of step 4, headless.

- ``train plan CONFIG.yaml [--gpus N|IDS] [--vram GIB] [--device NAME] [--arch ISA] [--seq-len N]
  [--lengths variable|fixed] [--json]``: validation, memory breakdown against the device, and the
  advisor's ranked suggestions.
  Exit 0 when the config is valid, 1 when it has errors, 2 on unusable input (malformed YAML, ...).
- ``train init [--preset NAME | --demo] --out DIR``: write a run directory from a preset.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.progress import terminal_progress
from hipwizard.train import (
    DEFAULT_PRESET,
    DEMO_PRESET,
    GPUS_HELP,
    KNOWN_DEVICES,
    Plan,
    init_run_dir,
    load_presets,
    parse_gpus,
    plan_file,
    utilisation,
)
from hipwizard.workspace import Workspace


def add_train_commands(train_sub) -> None:
    p = train_sub.add_parser("plan", help="validate a LLaMA-Factory config, estimate its memory, suggest faster settings")
    p.add_argument("config", type=Path, metavar="CONFIG.yaml")
    p.add_argument("--gpus", default=None, metavar="N|IDS", help=f"GPUs per run (data parallel; default 1): {GPUS_HELP}")
    p.add_argument("--vram", type=float, default=None, metavar="GIB",
                   help="memory of one GPU in GiB (default: the doctor's report, else an MI300X's 192)")
    p.add_argument("--device", choices=sorted(KNOWN_DEVICES), default=None, help="plan for a known GPU")
    p.add_argument("--arch", default=None, metavar="ISA", help="GPU architecture for the bf16 rule (gfx942, sm_90, ...)")
    p.add_argument("--seq-len", type=int, default=None, metavar="N",
                   help="padded tokens per sequence at the peak (default: cutoff_len, the worst case)")
    p.add_argument("--lengths", choices=("variable", "fixed"), default=None,
                   help="sample lengths: variable (default; padding varies per batch and fragments memory) "
                        "or fixed (packed or equal-length samples)")
    p.add_argument("--workspace", type=Path, default=Path("."), metavar="DIR",
                   help="the workspace folder, with the doctor's report (default: the current folder)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)

    i = train_sub.add_parser("init", help="write a run directory (config.yaml + ds_config.json) from a preset")
    i.add_argument("--preset", default=None, choices=sorted(load_presets()), help=f"default {DEFAULT_PRESET}")
    i.add_argument("--demo", action="store_true", help="the CPU demo: tiny Llama and dataset built offline")
    i.add_argument("--out", type=Path, required=True, metavar="DIR", help="run directory to create")
    i.set_defaults(func=cmd_init)


def cmd_plan(args: argparse.Namespace) -> int:
    ws = Workspace(args.workspace) if args.workspace.is_dir() else None
    choice = parse_gpus(args.gpus)
    plan = plan_file(args.config, ws=ws, gpus=choice.count if choice else 1, vram_gib=args.vram, device=args.device,
                     arch=args.arch, seq_len=args.seq_len, lengths=args.lengths)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
    else:
        sys.stdout.write(render_plan(plan))
    return 0 if plan.valid else 1


def render_plan(plan: Plan, top: int = 5) -> str:
    """The plan as plain text: symbols and words, never colour alone."""
    out: list[str] = []
    dev = plan.device
    vram = f"{dev.vram_gib:g} GiB" if dev.vram_gib is not None else "unknown memory"
    out.append(f"Device: {dev.name}, {vram}{' (' + dev.arch + ')' if dev.arch else ''} x {plan.world_size} — {dev.source}")
    out.append("")
    out.append("Validation")
    if not plan.issues:
        out.append("  ✔ ok: no problems found")
    for issue in plan.issues:
        out.append(f"  {issue.line()}")
    out.append("")
    est = plan.estimate
    out.append("Memory estimate (peak per GPU)")
    if est is None or not est.available:
        out.append(f"  ✖ {est.reason if est else 'no estimate'}")
    else:
        for part in est.parts:
            out.append(f"  {part.name:<22} {part.gib:8.2f} GiB  {part.note}")
        out.append(f"  {'total':<22} {est.total_gib:8.2f} GiB")
        if est.fits is not None:
            word = "✔ fits" if est.fits else "✖ does not fit"
            out.append(f"  {word}: margin {est.margin_gib:.1f} GiB of {est.device_vram_gib:g} GiB")
        for note in est.notes:
            out.append(f"  ℹ {note}")
    out.append("")
    advice = plan.advice
    planned = advice is not None and advice.baseline is not None and advice.baseline.wall_s is not None
    order = f"shortest run of the planned {plan.config.max_steps} steps first" if planned else "fastest first"
    out.append(f"Advisor (same effective batch and sequence length, {order})")
    if advice is None or advice.reason:
        out.append(f"  ⚠ {advice.reason if advice else 'no advice'}")
    if advice is not None and advice.calibration:
        out.append(f"  ℹ {advice.calibration}")
    if advice is not None and advice.baseline is not None:
        base = advice.baseline
        out.append(f"  your config: {base.label}, ~{base.throughput.tokens_per_s:,.0f} tokens/s "
                   f"({_words(base)}){utilisation_note(plan, base)}")
        if base.wall_s is not None:
            out.append(f"       {base.planned_words}")
    for n, cand in enumerate(advice.ranked[:top] if advice else [], 1):
        changes = ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in cand.changes.items()) or "no change"
        out.append(f"  {n}. {cand.speedup:.2f}x  {cand.label}  [{changes}]  ~{cand.throughput.tokens_per_s:,.0f} "
                   f"tokens/s, {cand.estimate.total_gib:.1f} GiB ({_words(cand)}){utilisation_note(plan, cand)}")
        if cand.wall_s is not None:  # ranked by the planned run's wall time (max_steps set); how, for the first
            out.append(f"       {cand.planned_words if n == 1 else cand.planned_short}")
        if n == 1:
            for reason in cand.reasons:
                out.append(f"       - {reason}")
    if advice is not None and advice.considered:
        out.append(f"  ({advice.considered} variants considered, {len(advice.ranked)} fit)")
    for line in advice.excluded if advice else []:
        out.append(f"  ✖ never proposed: {line}")
    for line in advice.not_offered if advice else []:
        out.append(f"  ○ not offered: {line}")
    for note in plan.notes:
        out.append(f"ℹ {note}")
    return "\n".join(out) + "\n"


SOURCE_WORDS = {"measured": "measured here", "calibrated": "calibrated here", "predicted": "predicted, H200-fitted model"}


def _words(cand) -> str:
    """Where a candidate's numbers come from, e.g. "measured here; memory predicted" (a run with no device peak)."""
    return SOURCE_WORDS["predicted"] if cand.source == "predicted" else cand.source_words


def utilisation_note(plan: Plan, cand) -> str:
    """", MFU 48% of measured GEMM, 41% of spec" for a candidate's tokens/s (empty without a model shape)."""
    shape = plan.shape.shape if plan.shape else None
    if shape is None:
        return ""
    u = utilisation(cand.throughput.tokens_per_s, cand.config, shape, gpus=plan.world_size, ceiling=plan.ceiling,
                    gpu_name=plan.device.name)
    parts = [f"MFU {u.of_ceiling:.0%} of measured GEMM" if u.of_ceiling is not None else "",
             f"{u.of_spec:.0%} of spec" if u.of_spec is not None else ""]
    parts = [p for p in parts if p]
    return (", " + ", ".join(parts)) if parts else ""


def cmd_init(args: argparse.Namespace) -> int:
    if args.demo and args.preset not in (None, DEMO_PRESET):
        raise UserError("--demo and --preset are exclusive (the demo is a preset of its own)")
    name = DEMO_PRESET if args.demo else (args.preset or DEFAULT_PRESET)
    with terminal_progress() as progress:
        run, config = init_run_dir(args.out, name, progress=progress)
    print(f"✔ wrote {run.config_path}" + (f" and {run.deepspeed_path.name}" if config.uses_deepspeed else ""))
    print(f"  next: hipwizard train plan {run.config_path}   then: hipwizard train run {run.path}")
    return 0
