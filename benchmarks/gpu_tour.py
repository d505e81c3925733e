"""The whole tour on a real GPU, side by side with bare LLaMA-Factory (issue 8).

Run on the GPU box from the repository root (benchmarks/gpu_tour.sh sets up the wheels first):

    python benchmarks/gpu_tour.py --work /tmp/tour --out "$OUT" [--phases doctor,parity,ab,memory]

Phases:
  doctor  `hipwizard doctor --json` and `--record` (a real NVIDIA environment, as a replay fixture).
  parity  `hipwizard parity capture` of every attention/MLP layer in bf16 and fp32 with a small
          Llama-shaped model carried from the CPU machine (same files -> same weights hash).
  ab      training on a Llama-3-8B-shaped model (random bf16 weights) with the migration recipe (LoRA
          q_proj,v_proj, batch 4 x accumulation 4, cutoff 1024, bf16, ZeRO-3) and with the advisor's pick
          for the same effective batch, each launched through hipwizard (launcher + tailer, headless) and
          bare (`llamafactory-cli train`, identical YAML), alternating A/B.
  memory  the remaining memory-validation configs of benchmarks/memory_validate.py.

Throughput: steady state, not LLaMA-Factory's cumulative `throughput`. A watcher polls each run's
trainer_log.jsonl every 20 ms and stamps each step's arrival; tokens/s = tokens of steps k..N / time
between their arrivals (k = --warmup). Every sample is ~830 tokens (fixed-length dataset), so a step's
tokens are its samples x the sample length (hipwizard.train.run.throughput: the short last step of an epoch
counted by its samples, read from the trainer's banner; the trainer's total_tokens, padding included, and
the naive every-step-full rate are kept beside it). Peak VRAM: hipwizard's own telemetry
(`hipwizard.gpu`, NVML here) sampled every 0.2 s, minus what was in use before, against RECORD_VRAM's
`vram_reserved`/`vram_allocated` in trainer_log.jsonl. Prints a table last; writes results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import memory_validate as mv  # noqa: E402
from gpu_tour_clock import Poller, StepClock, rate_fields, steady_rate_of  # noqa: E402

from hipwizard.train.run.rundir import save_run_dir  # noqa: E402

PY = sys.executable
ENV = dict(os.environ, DISABLE_VERSION_CHECK="1", HF_HUB_OFFLINE="1", CUDA_VISIBLE_DEVICES="0",
           NCCL_NVLS_ENABLE="0")


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    print("$", " ".join(map(str, argv)), flush=True)
    return subprocess.run([str(a) for a in argv], env=ENV, text=True, capture_output=True, **kw)


# --- doctor ------------------------------------------------------------------------------------------
def phase_doctor(work: Path, out: Path, results: dict) -> None:
    rec = work / "doctor-h200"
    proc = sh([PY, "-m", "hipwizard", "doctor", "--json", "--record", rec, "--no-save"], timeout=300)
    (out / "doctor-h200.json").write_text(proc.stdout)
    with tarfile.open(out / "doctor-h200-record.tar.gz", "w:gz") as tar:
        tar.add(rec, arcname="h200")
    try:
        report = json.loads(proc.stdout)
        checks = report.get("checks", [])
        results["doctor"] = {"exit": proc.returncode,
                             "checks": {c.get("id", c.get("name")): c.get("status") for c in checks}}
    except ValueError:
        results["doctor"] = {"exit": proc.returncode, "stderr": proc.stderr[-500:]}
    print(json.dumps(results["doctor"], indent=1), flush=True)


# --- parity ------------------------------------------------------------------------------------------
def phase_parity(work: Path, out: Path, results: dict, model: Path) -> None:
    results["parity"] = {}
    for dtype in ("bf16", "fp32"):
        path = out / f"parity-h200-{dtype}.safetensors"
        proc = sh([PY, "-m", "hipwizard", "parity", "capture", "--model", model, "--dtype", dtype,
                   "--device", "cuda", "--batch", "2", "--seq", "128", "--out", path, "--json"], timeout=300)
        print(proc.stdout[-1500:], proc.stderr[-1500:], flush=True)
        results["parity"][dtype] = {"exit": proc.returncode, "bytes": path.stat().st_size if path.exists() else None}
    proc = sh([PY, "benchmarks/parity.py", "--device", "cuda", "--size", "medium", "--dtype", "bf16"], timeout=300)
    results["parity"]["benchmark"] = proc.stdout[-3000:]
    print(proc.stdout[-3000:], proc.stderr[-800:], flush=True)


# --- training ----------------------------------------------------------------------------------------
def run_training(kind: str, run_dir: Path, config, tokens_per_step: float, warmup: int, ws: Path) -> dict:
    save_run_dir(run_dir, config)
    telemetry_peak = TelemetryPeak()
    before = telemetry_peak.used_gib()
    log = run_dir / "output" / "trainer_log.jsonl"
    start = time.monotonic()
    with StepClock(log) as clock, telemetry_peak:
        if kind == "bare":
            env = dict(ENV, RECORD_VRAM="1")
            if config.uses_deepspeed:
                env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")
            with open(run_dir / "bare.log", "w") as fh:
                rc = subprocess.run(["llamafactory-cli", "train", "config.yaml"], cwd=run_dir, env=env,
                                    stdout=fh, stderr=subprocess.STDOUT, timeout=900).returncode
        else:
            with open(run_dir / "hipwizard-follow.log", "w") as fh:
                rc = subprocess.run([PY, "-m", "hipwizard", "train", "run", str(run_dir), "--platform", "cuda",
                                     "--gpus", "0", "--workspace", str(ws)], env=ENV, stdout=fh,
                                    stderr=subprocess.STDOUT, timeout=900).returncode
    wall = time.monotonic() - start
    rows = clock.rows
    rate = steady_rate_of(clock.arrivals, tokens_per_step, warmup, rows=rows, run_dir=run_dir,
                          sample_tokens=tokens_per_step / 16)  # fixed-length samples: 16 a full step
    result = {
        "exit": rc, "wall_s": round(wall, 1), "steps": max(clock.arrivals, default=0),
        "tokens_per_s": rate.tokens_per_s if rate else None, **rate_fields(rate),
        "telemetry_peak_gib": round(telemetry_peak.peak - before, 2) if telemetry_peak.peak else None,
        "record_vram_reserved_gib": max((r.get("vram_reserved", 0) for r in rows), default=None),
        "record_vram_allocated_gib": max((r.get("vram_allocated", 0) for r in rows), default=None),
        "loss": [r["loss"] for r in rows if "loss" in r],
    }
    if rc != 0:
        tail = (run_dir / ("bare.log" if kind == "bare" else "train.log"))
        for cand in (tail, run_dir / "hipwizard-follow.log"):
            if cand.exists():
                print(f"--- {cand} (tail)\n" + cand.read_text(errors="replace")[-2500:], flush=True)
    print(f"{kind:<9} {run_dir.name:<28} exit {rc} {json.dumps({k: v for k, v in result.items() if k != 'loss'})}",
          flush=True)
    return result


class TelemetryPeak(Poller):
    """Peak device memory (GiB) in use on GPU 0 through hipwizard's own telemetry, sampled every 0.2 s."""

    def __init__(self) -> None:
        from hipwizard.gpu import GpuTelemetry

        super().__init__()
        self.telemetry, self.peak = GpuTelemetry(), 0.0

    def used_gib(self) -> float:
        reading = self.telemetry.sample()
        used = [s.vram_used for s in reading.samples if s.vram_used is not None]
        return (used[0] / 2**30) if used else 0.0

    def poll(self) -> None:
        self.peak = max(self.peak, self.used_gib())


def advisor_pick(config, shape, seq_len: int):
    from hipwizard.train.planning.advisor import advise

    advice = advise(config, shape, vram_gib=139.8, seq_len=seq_len)
    best = advice.best
    print("advisor:", json.dumps(advice.to_dict(top=3), indent=1, default=str)[:3000], flush=True)
    return best


def phase_ab(work: Path, out: Path, results: dict, args) -> None:
    from hipwizard.train.planning.memory import estimate_memory
    from hipwizard.train.planning.model_shape import load_shape

    model_dir, data_dir = work / "m8b", work / "data"
    mv.build_model(model_dir)
    mv.build_dataset(data_dir, model_dir, args.seq_len)
    shape = load_shape(str(model_dir)).shape
    recipe = mv.recipe(model_dir, data_dir, args.seq_len, args.recipe_steps, zero_stage=3,
                       per_device_train_batch_size=4, gradient_accumulation_steps=4)
    recipe = recipe.model_copy(update={"cutoff_len": 1024})
    best = advisor_pick(recipe, shape, args.seq_len)
    pick = best.config.model_copy(update={"max_steps": args.pick_steps})
    tokens_per_step = 16 * args.seq_len
    ws = work / "ws"
    ab = results.setdefault("ab", {})
    order = [("recipe", recipe, "bare"), ("recipe", recipe, "hipwizard"), ("pick", pick, "bare"),
             ("pick", pick, "hipwizard")]
    if args.repeat:
        order += order
    for i, (name, cfg, kind) in enumerate(order):
        est = estimate_memory(cfg, shape, seq_len=args.seq_len, lengths="fixed")  # fixed-length dataset
        res = run_training(kind, work / "runs" / f"{name}-{kind}-{i}", cfg, tokens_per_step, args.warmup, ws)
        res["predicted_gib"] = round(est.total_gib, 2)
        res["label"] = best.label if name == "pick" else "recipe: ZeRO-3, ckpt on, batch 4 x 4"
        ab.setdefault(name, {}).setdefault(kind, []).append(res)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    with tarfile.open(out / "train-logs.tar.gz", "w:gz") as tar:
        for run in sorted((work / "runs").iterdir()):
            for rel in ("output/trainer_log.jsonl", "config.yaml", "ds_config.json", "train.log", "bare.log",
                        "run.json"):
                if (run / rel).exists():
                    tar.add(run / rel, arcname=f"{run.name}/{rel}")


def phase_memory(work: Path, out: Path, results: dict, args) -> None:
    proc = subprocess.run([PY, "benchmarks/memory_validate.py", "--work", str(work), "--seq-len", str(args.seq_len),
                           "--steps", str(args.memory_steps), "--only", *args.memory_configs],
                          env=ENV, text=True, capture_output=True, timeout=1800)
    print(proc.stdout[-4000:], proc.stderr[-1500:], flush=True)
    if (work / "results.json").exists():
        results["memory"] = json.loads((work / "results.json").read_text())


def print_table(results: dict) -> None:
    ab = results.get("ab", {})
    if not ab:
        return
    print("\n== GPU tour: hipwizard-launched vs bare llamafactory-cli (steady-state tokens/s) ==")
    print(f"{'config':<8} {'kind':<10} {'tok/s':>8} {'wall s':>7} {'telemetry GiB':>13} {'reserved GiB':>12} "
          f"{'alloc GiB':>9} {'predicted':>9} {'est err':>8}")
    for name, kinds in ab.items():
        for kind, runs in kinds.items():
            for r in runs:
                peak = r.get("telemetry_peak_gib")
                err = f"{100 * (r['predicted_gib'] - peak) / peak:+.1f}%" if peak else "-"
                tps = f"{r['tokens_per_s']:.0f}" if r.get("tokens_per_s") else "-"
                print(f"{name:<8} {kind:<10} {tps:>8} {r['wall_s']:>7} {peak or '-':>13} "
                      f"{r.get('record_vram_reserved_gib') or '-':>12} {r.get('record_vram_allocated_gib') or '-':>9} "
                      f"{r['predicted_gib']:>9} {err:>8}")

    def mean(xs):
        xs = [x for x in xs if x]
        return sum(xs) / len(xs) if xs else None

    tps = {(n, k): mean(r.get("tokens_per_s") for r in runs) for n, kinds in ab.items() for k, runs in kinds.items()}
    for name in ab:
        a, b = tps.get((name, "hipwizard")), tps.get((name, "bare"))
        if a and b:
            print(f"{name}: hipwizard / bare throughput = {a / b:.3f}")
    if tps.get(("pick", "bare")) and tps.get(("recipe", "bare")):
        print(f"advisor pick / recipe (bare) = {tps[('pick', 'bare')] / tps[('recipe', 'bare')]:.2f}x")
    if tps.get(("pick", "hipwizard")) and tps.get(("recipe", "hipwizard")):
        print(f"advisor pick / recipe (hipwizard) = {tps[('pick', 'hipwizard')] / tps[('recipe', 'hipwizard')]:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--phases", default="doctor,parity,ab")
    parser.add_argument("--parity-model", type=Path, default=ROOT / ".gpu" / "parity" / "model")
    parser.add_argument("--seq-len", type=int, default=830)
    parser.add_argument("--recipe-steps", type=int, default=10)
    parser.add_argument("--pick-steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", action="store_true", help="run the A/B order twice")
    parser.add_argument("--memory-steps", type=int, default=5)
    parser.add_argument("--memory-configs", nargs="*", default=["lora-plain-bs4-ckpt", "lora-zero2-bs4-ckpt",
                        "lora-zero3-offload-bs4-ckpt", "lora-plain-bs4-nockpt", "lora-plain-bs8-nockpt"])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    phases = args.phases.split(",")
    for phase in phases:
        t0 = time.monotonic()
        try:
            if phase == "doctor":
                phase_doctor(args.work, args.out, results)
            elif phase == "parity":
                phase_parity(args.work, args.out, results, args.parity_model)
            elif phase == "ab":
                phase_ab(args.work, args.out, results, args)
            elif phase == "memory":
                phase_memory(args.work, args.out, results, args)
        except Exception as exc:  # one phase failing must not lose the others' numbers
            import traceback

            traceback.print_exc()
            results.setdefault("errors", {})[phase] = repr(exc)
        print(f"== phase {phase}: {time.monotonic() - t0:.0f} s", flush=True)
        results_path.write_text(json.dumps(results, indent=1, default=str))
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
