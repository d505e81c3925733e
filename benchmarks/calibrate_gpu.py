"""Issue 18 on the GPU box, one call: GEMM ceiling, calibration of the 8B recipe, bare vs hipwizard, held-out check.

    bash benchmarks/calibrate_gpu.sh      (sets up the carried wheels, then runs this)

1. ``hipwizard train bench``: the measured bf16 GEMM ceiling.
2. ``hipwizard train calibrate recipe.yaml --candidates 4 --steps S`` (timed: target < 5 min): the advisor's top
   four for the 8B recipe (LoRA q_proj,v_proj, 4 x 4, ZeRO-3, 830-token samples), each through the launcher.
3. The pick (best measured) once more with bare ``llamafactory-cli`` (same YAML, same steps, the step-arrival
   clock of gpu_tour_clock at 20 ms): hipwizard-launched / bare steady tokens/s (target >= 0.99).
4. Held-out: up to 3 configs the calibration did not measure, from the calibrated ranking, run through the
   same ``calibrate.measure``; their calibrated predictions (peak, step time) against what they measured
   (target: within 3% and 5%).
Writes $OUT/results.json after every phase.
"""

from __future__ import annotations

import json
import os
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
results: dict = {}


def save() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))


def hw(*args, timeout=900) -> subprocess.CompletedProcess:
    t = time.monotonic()
    proc = subprocess.run([PY, "-m", "hipwizard", *map(str, args)], text=True, capture_output=True, timeout=timeout)
    print(f"$ hipwizard {' '.join(map(str, args))}  ({time.monotonic() - t:.0f} s, exit {proc.returncode})")
    print(proc.stdout[-4000:], proc.stderr[-2000:], flush=True)
    return proc


def main() -> int:
    from hipwizard.train.rundir import save_run_dir

    t0 = time.monotonic()
    model_dir, data_dir, ws = WORK / "m8b", WORK / "data", WORK / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    mv.build_model(model_dir)
    mv.build_dataset(data_dir, model_dir, SEQ)
    results["setup_s"] = round(time.monotonic() - t0, 1)
    recipe = mv.recipe(model_dir, data_dir, SEQ, 200, zero_stage=3, per_device_train_batch_size=4,
                       gradient_accumulation_steps=4).model_copy(update={"cutoff_len": 1024})
    rd = save_run_dir(WORK / "recipe", recipe)
    cfg = rd.config_path
    proc = hw("train", "bench", "--workspace", ws, "--json", timeout=300)
    results["bench"] = json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr[-800:]
    save()

    t = time.monotonic()
    proc = hw("train", "calibrate", cfg, "--candidates", "4", "--steps", STEPS, "--warmup", WARMUP, "--seq-len", SEQ,
              "--lengths", "fixed", "--gpus", "0", "--platform", "cuda", "--workspace", ws, "--json", timeout=900)
    results["calibrate_wall_s"] = round(time.monotonic() - t, 1)
    results["calibration"] = json.loads(proc.stdout) if proc.returncode in (0, 1) else proc.stderr[-2000:]
    save()
    proc = hw("train", "plan", cfg, "--device", "h200", "--seq-len", SEQ, "--lengths", "fixed", "--workspace", ws)
    results["plan_text"] = proc.stdout
    save()

    from hipwizard.train import state
    from hipwizard.train.calibrate import GpuPeak, measure
    from hipwizard.train.device import KNOWN_DEVICES, DeviceTarget
    from hipwizard.train.launcher import LaunchOptions
    from hipwizard.train.services import plan
    from hipwizard.train.yaml_io import load_yaml
    from hipwizard.workspace import Workspace

    wsp = Workspace.open(ws)
    loaded = load_yaml(cfg)
    name, vram, arch = KNOWN_DEVICES["h200"]
    target = DeviceTarget(GpuPeak(0).name or name, 139.8, arch, "bench")
    GpuPeak(0).used_gib()
    calibrated = plan(loaded.config, ws=wsp, base_dir=loaded.base_dir, seq_len=SEQ, lengths="fixed", device=target)
    raw = plan(loaded.config, ws=wsp, base_dir=loaded.base_dir, seq_len=SEQ, lengths="fixed", device=target,
               use_calibration=False)
    adv = calibrated.advice
    results["advice_calibration"] = adv.calibration
    pick = adv.best
    results["pick"] = {"label": pick.label, "source": pick.source, "tokens_per_s": pick.throughput.tokens_per_s}
    save()

    # bare llamafactory-cli on the pick, same YAML and steps
    pick_cfg = pick.config.model_copy(update={"max_steps": STEPS, "logging_steps": 1, "save_steps": 10**9})
    bare_dir = WORK / "bare-pick"
    save_run_dir(bare_dir, pick_cfg)
    env = dict(os.environ, RECORD_VRAM="1", CUDA_VISIBLE_DEVICES="0")
    if pick_cfg.uses_deepspeed:  # bare llamafactory-cli needs torchrun for DeepSpeed (the launcher sets it)
        env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")
    with StepClock(bare_dir / "output" / "trainer_log.jsonl") as clock, open(bare_dir / "bare.log", "w") as fh:
        rc = subprocess.run(["llamafactory-cli", "train", "config.yaml"], cwd=bare_dir, env=env, stdout=fh,
                            stderr=subprocess.STDOUT, timeout=600).returncode
    bare_tps = steady_tokens_per_s(clock.arrivals, 16 * SEQ, WARMUP)
    measured = pick.measured
    results["ab"] = {"bare_exit": rc, "bare_tokens_per_s": bare_tps,
                     "hipwizard_tokens_per_s": measured.tokens_per_s if measured else None,
                     "ratio": (measured.tokens_per_s / bare_tps) if measured and bare_tps else None}
    print("A/B", results["ab"], flush=True)
    save()

    # held-out: calibrated (not measured) candidates, diverse settings first
    raw_by_label = {c.label: c for c in raw.advice.ranked}
    pool = [c for c in adv.ranked if c.source == "calibrated" and c.label in raw_by_label]
    chosen = []
    for test in (lambda c: True, lambda c: c.config.gradient_checkpointing, lambda c: not c.config.enable_liger_kernel,
                 lambda c: c.config.zero_stage is not None, lambda c: True, lambda c: True):
        for c in pool:
            if c not in chosen and test(c):
                chosen.append(c)
                break
        if len(chosen) == 3:
            break
    held = results.setdefault("held_out", [])
    gpu = GpuPeak(0)
    for i, cand in enumerate(chosen):
        if time.monotonic() - t0 > float(os.environ.get("CAL_BUDGET_S", "520")):
            held.append({"label": cand.label, "skipped": "time budget"})
            break
        m, _ = measure(raw_by_label[cand.label], WORK / "held" / str(i), loaded.document, loaded.base_dir,
                       steps=STEPS, warmup=WARMUP, options=LaunchOptions(gpus=[0], platform="cuda"), seq_len=SEQ,
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
    results["total_s"] = round(time.monotonic() - t0, 1)
    results["state_ceiling"] = str(state.ceiling(wsp))
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
