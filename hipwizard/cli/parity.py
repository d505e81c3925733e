"""``hipwizard parity capture|compare|curves``: the headless face of step 3.

Exit codes: 0 every module (or curve) within tolerance, 1 numerical failure (tolerance exceeded, NaN,
Inf, curves diverged), 2 bad input (UserError: wrong model, truncated file, missing modules, shape
mismatch). Argument parsing and printing only: the actions are parity's services (``hipwizard.parity``, its
door), which the dashboard calls too. Progress goes to stderr when it is a terminal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hipwizard import parity
from hipwizard.cli.parity_kernels import add_kernels
from hipwizard.cli.parity_postmortem import add_postmortem
from hipwizard.cli.workspace_option import add_workspace_option
from hipwizard.doctor import environment_stamp
from hipwizard.errors import UserError
from hipwizard.progress import terminal_progress
from hipwizard.textsafe import inert_line
from hipwizard.workspace import Workspace

TOLERANCE_CHOICES = ("fp64", "fp32", "fp16", "bf16")


def add_commands(sub) -> None:
    parity = sub.add_parser("parity", help="step 3: compare layer outputs across devices and dtypes; loss curves")
    actions = parity.add_subparsers(dest="parity_command", metavar="ACTION", required=True)
    cap = actions.add_parser("capture", help="run a model (or harness) once and store inputs, outputs and metadata")
    _subject_args(cap)
    _run_args(cap, dtype_default="fp32")
    cap.add_argument("--out", type=Path, required=True, help="the capture file to write (.safetensors)")
    cap.add_argument("--json", action="store_true", help="print the result as JSON")
    add_workspace_option(cap, ", whose doctor report stamps the capture with this machine's environment",
                         type=Path, default=Path("."))
    cap.set_defaults(func=cmd_capture)

    cmp_ = actions.add_parser("compare", help="compare a reference capture with a candidate, module by module")
    cmp_.add_argument("ref", nargs="?", type=Path, help="the reference capture (omit with --reference cpu)")
    cmp_.add_argument("cand", nargs="?", type=Path, help="a candidate capture (or re-run with --model/--harness)")
    _subject_args(cmp_)
    _run_args(cmp_, dtype_default=None)
    cmp_.add_argument("--reference", choices=("cpu",), help="same machine: float64 CPU reference vs --dtype on --device")
    cmp_.add_argument("--reference-run", type=Path, metavar="REF_RUN.safetensors",
                      help="the reference machine's capture in the run dtype (REF being its fp32/fp64 capture): "
                           "triangle verdicts, pass when the error is <= K x the reference's own error")
    cmp_.add_argument("--triangle", action="store_true",
                      help="with --reference cpu: also capture the reference in the run dtype (triangle verdicts)")
    cmp_.add_argument("--k", type=float, metavar="K", help="the triangle's factor (default 2)")
    cmp_.add_argument("--lean", action="store_true",
                      help="with --reference cpu --triangle: every side sketched and kept in memory (no file), "
                           "full tensors re-run only for the rows the triangle flags (fails or near K)")
    cmp_.add_argument("--forward-only", dest="backward", action="store_false", default=None,
                      help="skip the gradients even when the reference holds them")
    cmp_.add_argument("--tolerance", choices=TOLERANCE_CHOICES, help="tolerance profile (default: the less precise dtype)")
    cmp_.add_argument("--tol", action="append", metavar="KEY=VALUE",
                      help="override one tolerance field (cosine_min, rel_l2_max, rtol, atol, outside_max)")
    cmp_.add_argument("--tolerance-file", type=Path, help="a YAML file of tolerance profiles to use instead of the defaults")
    cmp_.add_argument("--jump", type=float, default=4.0, help="error ratio that marks where divergence starts (default 4)")
    cmp_.add_argument("--keep", type=Path, metavar="DIR", help="keep the captures made by this run in DIR")
    _workspace_args(cmp_)
    cmp_.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp_.set_defaults(func=cmd_compare)

    cur = actions.add_parser("curves", help="overlay two LLaMA-Factory runs' loss curves and measure the gap")
    cur.add_argument("run_a", type=Path, help="output folder (or trainer_log.jsonl) of run A")
    cur.add_argument("run_b", type=Path, help="output folder (or trainer_log.jsonl) of run B")
    cur.add_argument("--smoothing", type=float, default=0.3, help="EMA weight of the newest step (1 = raw)")
    cur.add_argument("--threshold", type=float, default=0.05, help="smoothed loss gap that counts as divergence")
    _workspace_args(cur)
    cur.add_argument("--json", action="store_true")
    cur.set_defaults(func=cmd_curves)
    add_postmortem(actions, _workspace_args)
    add_kernels(actions, _workspace_args)


def _subject_args(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--model", type=Path, help="a Hugging Face causal LM folder (local)")
    g.add_argument("--demo", action="store_true", help="the embedded demo's tiny Llama (built offline)")
    g.add_argument("--harness", type=Path, metavar="FILE.py", help="a harness file defining named kernel cases")
    p.add_argument("--adapter", type=Path, metavar="DIR",
                   help="a PEFT (LoRA) adapter folder loaded on top of --model, unmerged, as the trainer runs it")


def _run_args(p, dtype_default: str | None = None) -> None:
    p.add_argument("--layers", help="comma-separated module name globs (default: every decoder layer's "
                   "attention and MLP, the final norm and the logits)")
    p.add_argument("--dtype", default=dtype_default, choices=TOLERANCE_CHOICES,
                   help="dtype of this run" + (" (default: the reference's; fp32 with --reference cpu)" if dtype_default is None else ""))
    p.add_argument("--device", default="auto", help="cpu, cuda (also ROCm/HIP) or auto (default)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated inputs (default 0)")
    p.add_argument("--inputs", type=Path, metavar="FILE.safetensors",
                   help="feed these inputs instead of seeded ones: a training run's step batch "
                        "(`hipwizard parity postmortem`) or any file of input/input_ids (+ input/attention_mask)")
    p.add_argument("--batch", type=int, default=2, help="sequences per batch (default 2)")
    p.add_argument("--seq", type=int, default=32, help="tokens per sequence (default 32)")
    p.add_argument("--attn", help="attention backend: eager, sdpa, fa2, fa3, flex, sdpa-flash, sdpa-efficient, "
                   "sdpa-math, sdpa-cudnn; compare takes several, comma-separated (the attention-backend matrix)")
    p.add_argument("--backward", action="store_true", default=None,
                   help="also the backward pass: gradients of a seeded scalar loss w.r.t. each module's output, "
                        "input and trainable weights (compare: default when the reference holds them)")
    p.add_argument("--loss", default="lm", choices=("lm", "projection"),
                   help="the scalar loss of --backward: lm (next-token loss on the batch, default) or projection "
                        "(a seeded random projection of the logits)")
    p.add_argument("--grad-weights", default="lora", choices=("lora", "lora-full", "all", "none"),
                   help="whose weight gradients --backward keeps: lora (LoRA targets: lora_* or q_proj/v_proj, "
                        "default; each as a rank-16 sketch, what a LoRA's B and A would receive: ~1/64 of the "
                        "bytes), lora-full (the same, whole), all (every parameter of the module, whole) or none")
    p.add_argument("--grad-sketch", type=int, metavar="N",
                   help="--backward stores each module's ∂out/∂in as a count sketch of N values (default 8192: "
                        "rel L2 and cosine within ~1%% of the full tensor's, ~1/20 of the bytes); 0 keeps every "
                        "element (max |Δ| and the worst elements of gradients too)")
    p.add_argument("--compact", action="store_true",
                   help="store each module output as a count sketch of 8192 values too (a few MB for any model "
                        "size; cosine and rel L2 within ~1%%, per-element numbers not kept); a re-run follows "
                        "the reference")
    p.add_argument("--perturb-grad", action="append", metavar="MODULE=SCALE",
                   help="give MODULE a slightly wrong backward (a custom autograd Function adding noise of "
                        "relative size SCALE to its gradient; the forward is unchanged); a parameter name "
                        "(…q_proj.weight) gets a wrong weight gradient only")
    p.add_argument("--perturb", action="append", metavar="MODULE=SCALE",
                   help="add noise of relative size SCALE to MODULE's output (see what a broken kernel looks like)")


def _workspace_args(p) -> None:
    add_workspace_option(p, ", where the result is recorded", type=Path, default=Path("."))
    p.add_argument("--no-save", action="store_true", help="do not record the result in the workspace")


def _subject(args):
    if args.harness is not None:
        return parity.Subject(harness=args.harness)
    adapter = getattr(args, "adapter", None)
    if adapter is not None and args.model is None:
        raise UserError("--adapter goes with --model DIR (the model it was trained on)")
    if adapter is not None and not adapter.is_dir():
        raise UserError(f"--adapter {adapter}: no such folder")
    if args.model is not None:
        return parity.Subject(model=args.model, adapter=adapter)
    if args.demo:
        return parity.Subject(demo=True)
    return None


def _options(args):
    layers = [p.strip() for p in args.layers.split(",") if p.strip()] if args.layers else None
    if getattr(args, "inputs", None) is not None and not args.inputs.is_file():
        raise UserError(f"--inputs {args.inputs}: no such file")
    return parity.RunOptions(dtype=args.dtype, device=args.device, seed=args.seed, batch=args.batch, seq=args.seq,
                      layers=layers, perturb=_scales(args.perturb, "--perturb"), attn=args.attn,
                      backward=args.backward, loss=args.loss, grad_weights=args.grad_weights,
                      grad_sketch=_grad_sketch(getattr(args, "grad_sketch", None)),
                      compact=bool(getattr(args, "compact", False)),
                      perturb_grad=_scales(args.perturb_grad, "--perturb-grad"),
                      triangle=bool(getattr(args, "triangle", False)), lean=bool(getattr(args, "lean", False)),
                      inputs=str(args.inputs) if getattr(args, "inputs", None) else None)


def _grad_sketch(size: int | None) -> int | None:
    if size is not None and size < 0:
        raise UserError(f"--grad-sketch {size}: give a number of values (8192 by default), or 0 for every element")
    return size


def _scales(items: list[str] | None, flag: str) -> dict[str, float]:
    out = {}
    for item in items or []:
        name, sep, scale = item.rpartition("=")
        try:
            out[name] = float(scale)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise UserError(f"bad {flag} {item!r}: use MODULE=SCALE, e.g. model.layers.0.mlp=0.1")
    return out


def _workspace(args):
    return None if args.no_save else Workspace.open(args.workspace)


def cmd_capture(args) -> int:
    options = _options(args)
    options.environment = environment_stamp(Workspace.open(args.workspace))
    with terminal_progress() as progress:
        result = parity.run_capture(_subject(args), options, args.out, progress=progress)
    meta = result.meta
    if args.json:
        print(json.dumps({"path": str(result.path), "bytes": result.bytes, "modules": result.modules,
                          "timings": result.timings, "device_name": meta.get("device_name"),
                          "dtype": meta.get("dtype"), "torch": meta.get("torch"),
                          "backward": {k: v for k, v in (meta.get("backward") or {}).items() if k != "grads"} or None},
                         indent=2))
    else:
        print(f"wrote {result.path} ({_size(result.bytes)}, {result.modules} modules) — {meta.get('dtype')} on "
              f"{meta.get('device_name')}, torch {meta.get('torch')}")
        print("time: " + ", ".join(f"{k.removesuffix('_s')} {v:.3f} s" for k, v in result.timings.items()))
    return 0


def cmd_compare(args) -> int:
    if args.triangle and args.reference != "cpu":
        raise UserError("--triangle goes with --reference cpu; with a reference capture give --reference-run FILE")
    if args.lean and not (args.reference == "cpu" and args.triangle):
        raise UserError("--lean goes with --reference cpu --triangle (rows are settled by the triangle)")
    request = parity.CompareRequest(
        ref=args.ref, cand=args.cand, subject=_subject(args), same_machine=args.reference == "cpu",
        options=_options(args), keep=args.keep, ref_run=args.reference_run,
        tolerance=parity.TolerancePolicy(args.tolerance, parity.parse_overrides(args.tol), args.tolerance_file,
                                         args.jump, args.k),
    )
    with terminal_progress() as progress:
        outcome = parity.run_comparison(request, ws=_workspace(args), progress=progress)
    comp = outcome.comparison
    if args.json:
        print(json.dumps(comp.to_dict(), indent=2, default=str))
    else:
        print(parity.format_comparison(comp))
        if comp.timings:
            print("time/size: " + ", ".join(_timing(k, v) for k, v in comp.timings.items()))
    if comp.verdict == "invalid":
        problems = comp.problems or (comp.backward.problems if comp.backward is not None else []) or ["invalid"]
        print(f"hipwizard: error: {inert_line(problems[0])}", file=sys.stderr)
    return outcome.exit_code


def cmd_curves(args) -> int:
    gap = parity.curves(args.run_a, args.run_b, smoothing=args.smoothing, threshold=args.threshold,
                          ws=_workspace(args))
    if args.json:
        print(json.dumps(gap.as_dict(), indent=2))
    else:
        print(f"A: {gap.a.name} ({len(gap.a.steps)} steps)   B: {gap.b.name} ({len(gap.b.steps)} steps)   "
              f"smoothing {gap.smoothing:g}")
        print(f"{'step':>6} {'A':>10} {'B':>10} {'gap':>10}")
        for s, x, y in zip(gap.common_steps, gap.smooth_a, gap.smooth_b, strict=True):
            flag = "  ◀ exceeds" if s == gap.exceeds_at else ""
            print(f"{s:>6} {x:>10.4f} {y:>10.4f} {abs(x - y):>10.4f}{flag}")
        print(gap.headline())
    return 1 if gap.diverged else 0


def _timing(key: str, value) -> str:
    """One entry of a comparison's timings: bytes as a size, counts (``lean_flagged`` rows, ``lean_modules``) as
    numbers, the rest as seconds."""
    if key.endswith("bytes"):
        return f"{key} {_size(value)}"
    if key in ("lean_flagged", "lean_modules"):
        return f"{key} {int(value)}"
    return f"{key} {value:.3f} s"


def _size(n: float) -> str:
    """Capture sizes in decimal units, as file managers show them (kB, MB, GB)."""
    n = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
