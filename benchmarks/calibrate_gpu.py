"""Issue 18 on the GPU box: GEMM ceiling, calibration of the 8B recipe, held-out check, hipwizard vs bare.

    bash benchmarks/calibrate_gpu.sh [--phases calibrate,heldout,ratio]   (sets up the carried wheels, then this)

Phases (each fits one device call; a later phase reuses /tmp/cal when the machine is still warm, else rebuilds
the model and takes the calibration from $CAL_FROM, the ``train.json`` a calibrate phase wrote to $OUT):

calibrate  ``hipwizard train bench`` (the measured bf16 GEMM ceiling), then ``hipwizard train calibrate
           recipe.yaml --candidates 4 --steps S`` (timed: target < 5 min): the advisor's top four for the 8B
           recipe (LoRA q_proj,v_proj, 4 x 4, ZeRO-3, 830-token samples), each through the launcher.
heldout    configs the calibration did not measure, from the calibrated ranking (the top one, another batch
           split of a measured family, checkpointing on, Liger off), run through the same ``calibrate.measure``;
           their calibrated predictions (peak, step time) against what they measured (target: within 3% / 5%).
ratio      the advisor's pick, launched by hipwizard (``services.launch``) and by bare ``llamafactory-cli`` on
           the same YAML, alternated A B A B ($RATIO_PAIRS pairs of $RATIO_STEPS steps), steady tokens/s from
           the same 20 ms step-arrival clock (target >= 0.99).
Writes $OUT/results-PHASE.json after every measurement.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import memory_validate as mv  # noqa: E402
from gpu_tour_clock import StepClock, steady_tokens_per_s  # noqa: E402

PY = sys.executable
OUT = Path(os.environ.get("OUT", "/tmp/cal-out"))
WORK = Path("/tmp/cal")
SEQ = 830
STEPS = int(os.environ.get("CAL_STEPS", "12"))
WARMUP = 3
T0 = time.monotonic()
BUDGET = float(os.environ.get("CAL_BUDGET_S", "540"))
results: dict = {}
phase_name = ["setup"]


def save() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"results-{phase_name[0]}.json").write_text(json.dumps(results, indent=1, default=str))


def hw(*args, timeout=900) -> subprocess.CompletedProcess:
    t = time.monotonic()
    proc = subprocess.run([PY, "-m", "hipwizard", *map(str, args)], text=True, capture_output=True, timeout=timeout)
    print(f"$ hipwizard {' '.join(map(str, args))}  ({time.monotonic() - t:.0f} s, exit {proc.returncode})")
    print(proc.stdout[-4000:], proc.stderr[-2000:], flush=True)
    return proc


def setup():
    """The 8B model, its data, the recipe's run folder and the workspace (built once per machine)."""
    from hipwizard.train.run.rundir import save_run_dir

    t = time.monotonic()
    model_dir, data_dir, ws = WORK / "m8b", WORK / "data", WORK / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    mv.build_model(model_dir)
    mv.build_dataset(data_dir, model_dir, SEQ)
    recipe = mv.recipe(model_dir, data_dir, SEQ, 200, zero_stage=3, per_device_train_batch_size=4,
                       gradient_accumulation_steps=4).model_copy(update={"cutoff_len": 1024})
    cfg = save_run_dir(WORK / "recipe", recipe).config_path
    stored = ws / ".hipwizard" / "train.json"
    if not stored.is_file() and os.environ.get("CAL_FROM"):
        stored.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.environ["CAL_FROM"], stored)
    results["setup_s"] = round(time.monotonic() - t, 1)
    return cfg, ws


def plans(cfg: Path, ws: Path):
    """(loaded config, calibrated plan, uncalibrated plan) on this GPU."""
    from hipwizard.train.calibration.measure import GpuPeak
    from hipwizard.train.config.yaml_io import load_yaml
    from hipwizard.train.planning.device import KNOWN_DEVICES, DeviceTarget
    from hipwizard.train.services import plan
    from hipwizard.workspace import Workspace

    wsp = Workspace.open(ws)
    loaded = load_yaml(cfg)
    name, _vram, arch = KNOWN_DEVICES["h200"]
    target = DeviceTarget(GpuPeak(0).name or name, 139.8, arch, "bench")
    calibrated = plan(loaded.config, ws=wsp, base_dir=loaded.base_dir, seq_len=SEQ, lengths="fixed", device=target)
    raw = plan(loaded.config, ws=wsp, base_dir=loaded.base_dir, seq_len=SEQ, lengths="fixed", device=target,
               use_calibration=False)
    return loaded, calibrated, raw


def phase_calibrate(cfg: Path, ws: Path) -> None:
    proc = hw("train", "bench", "--workspace", ws, "--json", timeout=300)
    results["bench"] = json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr[-800:]
    save()
    t = time.monotonic()
    proc = hw("train", "calibrate", cfg, "--candidates", "4", "--steps", STEPS, "--warmup", WARMUP, "--seq-len", SEQ,
              "--lengths", "fixed", "--gpus", "0", "--platform", "cuda", "--workspace", ws, "--json", timeout=900)
    results["calibrate_wall_s"] = round(time.monotonic() - t, 1)
    results["calibration"] = json.loads(proc.stdout) if proc.returncode in (0, 1) else proc.stderr[-2000:]
    shutil.copyfile(ws / ".hipwizard" / "train.json", OUT / "train.json")
    proc = hw("train", "plan", cfg, "--device", "h200", "--seq-len", SEQ, "--lengths", "fixed", "--workspace", ws)
    results["plan_text"] = proc.stdout
    _loaded, calibrated, _raw = plans(cfg, ws)
    pick = calibrated.advice.best
    results["pick"] = {"label": pick.label, "source": pick.source, "tokens_per_s": pick.throughput.tokens_per_s}
    save()


def held_out_choice(calibrated, raw) -> list:
    """Configs the calibration did not measure, the most informative first: the top calibrated one, another
    batch split of a measured family, checkpointing on, Liger off, then the next ranked."""
    from hipwizard.train.calibration.corrections import KIND_FIELDS

    raw_by_label = {c.label: c for c in raw.advice.ranked}
    pool = [c for c in calibrated.advice.ranked if c.source == "calibrated" and c.label in raw_by_label]
    measured = [c for c in calibrated.advice.ranked if c.source == "measured"]

    def family(c) -> tuple:
        return tuple(getattr(c.config, f) for f in KIND_FIELDS)

    fams = {family(c) for c in measured}
    tests = (lambda c: True, lambda c: family(c) in fams, lambda c: not c.config.disable_gradient_checkpointing,
             lambda c: not c.config.enable_liger_kernel, lambda c: True, lambda c: True)
    chosen = []
    for test in tests:
        c = next((c for c in pool if c not in chosen and test(c)), None)
        if c is not None:
            chosen.append(c)
    return [(c, raw_by_label[c.label]) for c in chosen]


def phase_heldout(cfg: Path, ws: Path) -> None:
    from hipwizard.train.calibration.measure import GpuPeak, measure
    from hipwizard.train.run.launcher import LaunchOptions

    loaded, calibrated, raw = plans(cfg, ws)
    results["advice_calibration"] = calibrated.advice.calibration
    held = results.setdefault("held_out", [])
    gpu = GpuPeak(0)
    for i, (cand, raw_cand) in enumerate(held_out_choice(calibrated, raw)):
        if time.monotonic() - T0 > BUDGET:
            held.append({"label": cand.label, "skipped": "time budget"})
            break
        m, _ = measure(raw_cand, WORK / "held" / str(i), loaded.document, loaded.base_dir, steps=STEPS,
                       warmup=WARMUP, options=LaunchOptions(gpus=[0], platform="cuda"), seq_len=SEQ,
                       should_stop=lambda: False, gpu=gpu)
        row = {"label": cand.label, "ok": m.ok, "error": m.error, "measured_step_s": m.step_s,
               "measured_peak_gib": m.peak_gib, "tokens_per_s": m.tokens_per_s,
               "calibrated_step_s": cand.throughput.step_seconds, "calibrated_peak_gib": cand.estimate.total_gib,
               "predicted_step_s": m.predicted_step_s, "predicted_peak_gib": m.predicted_peak_gib}
        if m.ok and m.peak_gib:
            row["peak_err"] = (cand.estimate.total_gib - m.peak_gib) / m.peak_gib
            row["step_err"] = (cand.throughput.step_seconds - m.step_s) / m.step_s
            row["raw_peak_err"] = (m.predicted_peak_gib - m.peak_gib) / m.peak_gib
            row["raw_step_err"] = (m.predicted_step_s - m.step_s) / m.step_s
        held.append(row)
        print("held-out", json.dumps(row), flush=True)
        save()


def phase_ratio(cfg: Path, ws: Path) -> None:
    from hipwizard.train.run.launcher import LaunchOptions
    from hipwizard.train.run.rundir import save_run_dir
    from hipwizard.train.run.runs import is_running
    from hipwizard.train.services import launch
    from hipwizard.workspace import Workspace

    steps, pairs = int(os.environ.get("RATIO_STEPS", "50")), int(os.environ.get("RATIO_PAIRS", "2"))
    _loaded, calibrated, _raw = plans(cfg, ws)
    best = calibrated.advice.best
    pick = best.config.model_copy(update={"max_steps": steps, "logging_steps": 1, "save_steps": 10**9})
    per_step = pick.effective_batch(1) * SEQ
    results["pick"] = {"label": best.label, "source": best.source, "deepspeed": pick.uses_deepspeed,
                       "steps": steps, "warmup": WARMUP}
    wsp = Workspace.open(ws)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
    if pick.uses_deepspeed:  # bare llamafactory-cli needs torchrun for DeepSpeed (the launcher sets it)
        env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")

    def start_hw(run_dir: Path):
        manifest = launch(wsp, run_dir, LaunchOptions(gpus=[0], platform="cuda")).manifest
        return lambda: is_running(manifest)

    def start_bare(run_dir: Path):
        log = open(run_dir / "bare.log", "w")
        proc = subprocess.Popen([shutil.which("llamafactory-cli") or "llamafactory-cli", "train", "config.yaml"],
                                cwd=run_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        return lambda: proc.poll() is None

    rows = results.setdefault("runs", [])
    for i in range(pairs):
        for who, start in (("hipwizard", start_hw), ("bare", start_bare)) if i % 2 == 0 else \
                (("bare", start_bare), ("hipwizard", start_hw)):
            if time.monotonic() - T0 > BUDGET:
                rows.append({"who": who, "skipped": "time budget"})
                save()
                return
            run_dir = save_run_dir(WORK / "ratio" / f"{i}-{who}", pick).path
            t = time.monotonic()
            with StepClock(run_dir / "output" / "trainer_log.jsonl") as clock:
                running = start(run_dir)
                while running() and time.monotonic() - t < 300:
                    time.sleep(0.05)
            tps = steady_tokens_per_s(clock.arrivals, per_step, WARMUP, rows=clock.rows, run_dir=run_dir,
                                      sample_tokens=SEQ)  # real tokens: the short last step as it is
            rows.append({"who": who, "pair": i, "tokens_per_s": tps, "steps": max(clock.arrivals, default=0),
                         "wall_s": round(time.monotonic() - t, 1)})
            print("ratio", json.dumps(rows[-1]), flush=True)
            save()
    by = {w: [r["tokens_per_s"] for r in rows if r.get("who") == w and r.get("tokens_per_s")]
          for w in ("hipwizard", "bare")}
    if by["hipwizard"] and by["bare"]:
        results["ratio_of_means"] = (sum(by["hipwizard"]) / len(by["hipwizard"])) / (sum(by["bare"]) / len(by["bare"]))
    save()


def main() -> int:
    phases = "calibrate,heldout"
    if "--phases" in sys.argv:
        phases = sys.argv[sys.argv.index("--phases") + 1]
    cfg, ws = setup()
    for name in phases.split(","):
        phase_name[0] = name
        results.clear()
        results["started_s"] = round(time.monotonic() - T0, 1)
        {"calibrate": phase_calibrate, "heldout": phase_heldout, "ratio": phase_ratio}[name](cfg, ws)
        results["total_s"] = round(time.monotonic() - T0, 1)
        save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
