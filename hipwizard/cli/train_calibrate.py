"""``hipwizard train calibrate`` and ``hipwizard train bench``: measure on this machine, headless.

- ``train calibrate CONFIG.yaml [--candidates K] [--steps N] [--warmup W] [--seq-len N] [--lengths ...]
  [--gpus 3,] [--platform ...] [--bench] [--json]``: runs the advisor's top K candidates for N real steps
  each through the launcher and saves what was measured; Ctrl-C stops the run in flight (nothing is left
  running) and keeps what was measured so far. Exit 0 when every candidate was measured, 1 otherwise, 2 on
  bad input, 130 when stopped.
- ``train bench [--seconds S] [--json]``: times a bf16 GEMM and saves the ceiling MFU is judged against.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.progress import terminal_progress
from hipwizard.train import GPUS_HELP, KNOWN_DEVICES, LaunchOptions, bench, calibrate, parse_gpus, spec_tflops
from hipwizard.workspace import Workspace


def add_train_commands(train_sub) -> None:
    c = train_sub.add_parser("calibrate", help="run the advisor's top candidates for a few steps and measure them")
    c.add_argument("config", type=Path, metavar="CONFIG.yaml")
    c.add_argument("--candidates", type=int, default=4, metavar="K", help="how many of the top candidates (default 4)")
    c.add_argument("--steps", type=int, default=8, metavar="N", help="steps per candidate (default 8)")
    c.add_argument("--warmup", type=int, default=2, metavar="W", help="first steps not timed (default 2)")
    c.add_argument("--seq-len", type=int, default=None, metavar="N", help="as for `train plan`")
    c.add_argument("--lengths", choices=("variable", "fixed"), default=None, help="as for `train plan`")
    c.add_argument("--vram", type=float, default=None, metavar="GIB", help="memory of the GPU (default: detected)")
    c.add_argument("--device", choices=sorted(KNOWN_DEVICES), default=None, help="the GPU, when not detected")
    c.add_argument("--gpus", default=None, metavar="N|IDS", help=f"{GPUS_HELP}; calibration runs on one GPU")
    c.add_argument("--platform", choices=("rocm", "cuda", "cpu"), help="default: detected from /dev")
    c.add_argument("--bench", action="store_true", help="time a bf16 GEMM first (the MFU ceiling)")
    c.add_argument("--knobs", action="store_true",
                   help="also the pick with each predicted-neutral knob changed (compile, FA2, optimizer, loader "
                        "workers, Unsloth, TunableOp on ROCm): advised only once measured")
    c.add_argument("--workspace", type=Path, default=Path("."), metavar="DIR",
                   help="the workspace folder (default: the current folder)")
    c.add_argument("--json", action="store_true", help="print the calibration as JSON")
    c.set_defaults(func=cmd_calibrate)
    b = train_sub.add_parser("bench", help="time a bf16 GEMM on this GPU: the ceiling MFU is judged against")
    b.add_argument("--seconds", type=float, default=1.0, help="timed seconds per size (default 1)")
    b.add_argument("--workspace", type=Path, default=Path("."), metavar="DIR",
                   help="the workspace folder (default: the current folder)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    ws = Workspace.open(args.workspace)
    with terminal_progress() as progress:
        ceiling = bench(ws, seconds=args.seconds, progress=progress)
    spec = spec_tflops(ceiling.gpu)
    if args.json:
        print(json.dumps({**ceiling.to_dict(), "spec_tflops": spec}, indent=2))
        return 0
    share = f" ({ceiling.tflops / spec:.0%} of the {spec:,.0f} TFLOP/s data sheet)" if spec else ""
    print(f"✔ bf16 GEMM on {ceiling.gpu}: {ceiling.tflops:,.1f} TFLOP/s at {ceiling.n}^3{share}; saved as the MFU ceiling")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    ws = Workspace.open(args.workspace)
    if not args.config.is_file():
        raise UserError(f"{args.config} {'is not a file' if args.config.exists() else 'does not exist'}")
    choice = parse_gpus(args.gpus)
    if choice is not None and choice.count != 1:
        raise UserError("calibration runs on one GPU: --gpus 1, or one device by id: --gpus 3,")
    gpus = list(choice.ids) if choice and choice.ids is not None else None
    options = LaunchOptions(gpus=gpus, platform=args.platform)
    with terminal_progress() as progress:
        cal = calibrate(ws, args.config, candidates=args.candidates, steps=args.steps, warmup=args.warmup,
                        seq_len=args.seq_len, lengths=args.lengths, vram_gib=args.vram, device=args.device,
                        options=options, with_bench=args.bench, progress=progress, knobs=args.knobs)
    if args.json:
        print(json.dumps(cal.to_dict(), indent=2))
    else:
        print(render_calibration(cal))
    if cal.stopped:
        return 130
    return 0 if len(cal.good) == len(cal.measurements) and cal.measurements else 1


def _pct(measured: float | None, predicted: float) -> str:
    return f"{100 * (predicted - measured) / measured:+.1f}%" if measured else "—"


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render_calibration(cal) -> str:
    """A table: each candidate's measured step time, tokens/s and peak against the prediction."""
    out = [f"Calibration on {cal.machine} — {cal.key.get('gpu')}, torch {cal.versions.get('torch', '?')}, "
           f"llamafactory {cal.versions.get('llamafactory', '?')} ({cal.wall_s:.0f} s)"]
    out.append(f"  {'candidate':<48} {'step s':>7} {'pred':>7} {'err':>7} {'tok/s':>8} {'peak GiB':>9} "
               f"{'pred':>7} {'err':>7} {'start s':>7} {'ckpt s':>7}")
    for m in cal.measurements:
        if not m.ok:
            out.append(f"  ✖ {m.label:<46} failed: {m.error}")
            continue
        peak = f"{m.peak_gib:9.2f}" if m.peak_gib is not None else f"{'—':>9}"
        out.append(f"  ✔ {m.label:<46} {m.step_s:7.3f} {m.predicted_step_s:7.3f} {_pct(m.step_s, m.predicted_step_s):>7} "
                   f"{m.tokens_per_s or 0:8,.0f} {peak} {m.predicted_peak_gib:7.2f} "
                   f"{_pct(m.peak_gib, m.predicted_peak_gib):>7} {_secs(m.startup_s):>7} {_secs(m.checkpoint_s):>7}")
    out.append("  start s: launch to the first steady step, less the steady steps before it; ckpt s: one checkpoint "
               "save timed inside the run (— not measured: too few steps)")
    if cal.ceiling_tflops:
        out.append(f"  measured bf16 GEMM ceiling: {cal.ceiling_tflops:,.3g} TFLOP/s")
    out.append("■ stopped: the run in flight was stopped; what was measured is kept" if cal.stopped else
               f"✔ saved: `hipwizard train plan {cal.config_path}` now shows measured and calibrated numbers")
    return "\n".join(out)
