"""Issue 18's last target on the GPU box, one short call: the advisor's pick for a small (Llama-3.2-1B-shaped,
random weights) LoRA recipe, launched by hipwizard's launcher vs bare ``llamafactory-cli train`` on the same
YAML, steady tokens/s from the same step-arrival clock (gpu_tour_clock, 20 ms) for both.

    bash benchmarks/launch_ratio_h200.sh      (sets up the carried wheels, then runs this)

Order: hipwizard first, then bare (no repeat: device time). Writes $OUT/results.json after every phase.
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

OUT = Path(os.environ.get("OUT", "/tmp/ratio-out"))
WORK = Path("/tmp/ratio")
SEQ, STEPS, WARMUP = 512, int(os.environ.get("RATIO_STEPS", "80")), 5
SHAPE_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
                tie_word_embeddings=True, vocab_size=128256)
results: dict = {}


def save() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))


def timed_run(run_dir: Path, start, tokens_per_step: float) -> dict:
    """Start a run with ``start()`` (returns a function that says whether it still runs), clock its steps."""
    t = time.monotonic()
    with StepClock(run_dir / "output" / "trainer_log.jsonl") as clock:
        running = start()
        while running() and time.monotonic() - t < 240:
            time.sleep(0.05)
    tps = steady_tokens_per_s(clock.arrivals, tokens_per_step, WARMUP, rows=clock.rows, run_dir=run_dir,
                              sample_tokens=SEQ)  # real tokens: the short last step of an epoch as it is
    return {"wall_s": round(time.monotonic() - t, 1), "steps": max(clock.arrivals, default=0), "tokens_per_s": tps}


def main() -> int:
    from hipwizard.train.planning.device import KNOWN_DEVICES, DeviceTarget
    from hipwizard.train.run.launcher import LaunchOptions
    from hipwizard.train.run.rundir import save_run_dir
    from hipwizard.train.services import launch, plan
    from hipwizard.workspace import Workspace

    t0 = time.monotonic()
    mv.SHAPE_8B.clear()
    mv.SHAPE_8B.update(SHAPE_1B)  # build_model builds whatever shape this names
    model_dir, data_dir = WORK / "m1b", WORK / "data"
    mv.build_model(model_dir)
    mv.build_dataset(data_dir, model_dir, SEQ, n=300)
    results["setup_s"] = round(time.monotonic() - t0, 1)
    save()
    recipe = mv.recipe(model_dir, data_dir, SEQ, STEPS, zero_stage=3, per_device_train_batch_size=4,
                       gradient_accumulation_steps=4, max_samples=300, preprocessing_num_workers=4)
    name, _vram, arch = KNOWN_DEVICES["h200"]
    p = plan(recipe, base_dir=WORK, seq_len=SEQ, lengths="fixed", device=DeviceTarget(name, 139.8, arch, "bench"))
    pick = p.advice.best.config.model_copy(update={"max_steps": STEPS, "logging_steps": 1, "save_steps": 10**9})
    results["pick"] = {"label": p.advice.best.label, "predicted_tokens_per_s": p.advice.best.throughput.tokens_per_s,
                       "deepspeed": pick.uses_deepspeed}
    save()
    if pick.uses_deepspeed and not (Path("/tmp/site") / "deepspeed").is_dir():
        results["error"] = "the pick uses DeepSpeed, not installed in this short call"
        save()
        return 1
    per_step = pick.effective_batch(1) * SEQ

    hw_dir = save_run_dir(WORK / "hipwizard", pick).path
    ws = Workspace.open(WORK / "ws")

    def start_hw():
        from hipwizard.train.run.runs import is_running

        manifest = launch(ws, hw_dir, LaunchOptions(gpus=[0], platform="cuda")).manifest
        return lambda: is_running(manifest)

    results["hipwizard"] = timed_run(hw_dir, start_hw, per_step)
    save()

    bare_dir = save_run_dir(WORK / "bare", pick).path
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
    if pick.uses_deepspeed:  # bare llamafactory-cli needs torchrun for DeepSpeed (the launcher sets it)
        env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")
    log = open(bare_dir / "bare.log", "w")

    def start_bare():
        proc = subprocess.Popen([shutil.which("llamafactory-cli") or "llamafactory-cli", "train", "config.yaml"],
                                cwd=bare_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        return lambda: proc.poll() is None

    results["bare"] = timed_run(bare_dir, start_bare, per_step)
    a, b = results["hipwizard"]["tokens_per_s"], results["bare"]["tokens_per_s"]
    results["ratio_hipwizard_over_bare"] = a / b if a and b else None
    results["total_s"] = round(time.monotonic() - t0, 1)
    save()
    print(json.dumps(results, indent=1), flush=True)
    if not b:
        print(open(bare_dir / "bare.log").read()[-3000:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
