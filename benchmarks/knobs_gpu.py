"""Issue 34 on the GPU box: the speed knobs measured one at a time, then the proof run side by side.

    bash benchmarks/knobs_gpu.sh --phases bisect,knobs          (first device call)
    bash benchmarks/knobs_gpu.sh --phases proof,packing         (second; NEW_PICK='{"torch_compile": true}' when
                                                                 the machine is fresh and /tmp/kn/knobs.json gone)

The 8B recipe of the GPU tour (Llama-3-8B-shaped random bf16 weights, LoRA q_proj,v_proj r8, llama3 template,
500 samples of 830 tokens, effective batch 16, SDPA, cosine, lr 5e-5); every run is bare ``llamafactory-cli train``
on a YAML written by hipwizard's ``save_run_dir`` unless it says "hipwizard" (``services.launch``: supervisor,
manifest, RECORD_VRAM). Steady tokens/s: steps 5..N stamped by the same 20 ms step-arrival clock, **real tokens
per step** (the epoch's short 32nd step counted as the 4 samples it holds: ``gpu_tour_clock.steady_rate_of``).
Beside it: peak device memory (nvidia-smi, 0.2 s), the SM clock and board power (nvidia-smi, 1 s, medians over
the run), and the loss of every step (for "the loss curve unchanged").

Phases (each writes $OUT/results-PHASE.json after every run):
bisect  ``liger_compile_bisect.py``: which Liger kernel crashes under torch.compile (see that file).
knobs   the previous pick P (ZeRO-2, no checkpointing, 16 x 1, Liger), then P with one knob changed: the fused
        AdamW (``optim: adamw_torch_fused``), 4 dataloader workers with pinned memory, torch.compile instead of
        Liger, torch.compile with Liger and no DeepSpeed (the crash), FlashAttention-2 when the image has it,
        pure_bf16, and FP8 (LLaMA-Factory's key as documented, then engaged through the launch environment;
        torchao's wheel carried in .whl/). $KN_ONLY picks and orders them.
        Kept in /tmp/kn/knobs.json for the proof.
proof   bare recipe (ZeRO-3, checkpointing, 4 x 4), bare P, the new pick bare, the new pick through hipwizard, then
        the new pick through hipwizard and bare again (A B B A) while the budget lasts. The new pick: P with every
        knob that ran and gained > 1% in the knobs phase (or $NEW_PICK, a JSON object of config changes).
packing the same model on variable-length samples (100-1,000 tokens): no packing (padded to each batch's longest),
        length-grouped batches and ``neat_packing`` (no attention across samples) at cutoff 1,024, real tokens/s
        and the loss per step ($KN_VAR_RUNS: which of unpacked_var, bucketed_var, neat_packing_var).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import memory_validate as mv  # noqa: E402
from gpu_tour_clock import Poller, StepClock, rate_fields, steady_rate_of  # noqa: E402

PY = sys.executable
OUT = Path(os.environ.get("OUT", "/tmp/kn-out"))
WORK = Path("/tmp/kn")
SEQ, WARMUP = 830, 5
STEPS = int(os.environ.get("KN_STEPS", "40"))
T0 = time.monotonic()
BUDGET = float(os.environ.get("KN_BUDGET_S", "560"))
PREV = dict(zero_stage=2, disable_gradient_checkpointing=True, per_device_train_batch_size=16,
            gradient_accumulation_steps=1, enable_liger_kernel=True)
RECIPE = dict(zero_stage=3, disable_gradient_checkpointing=False, per_device_train_batch_size=4,
              gradient_accumulation_steps=4, enable_liger_kernel=False)
# name -> (config changes over P, extra YAML keys LLaMA-Factory passes to the Trainer)
KNOBS: dict[str, tuple[dict, dict]] = {
    "fused_adamw": ({}, {"optim": "adamw_torch_fused"}),
    "loader_workers_4": ({}, {"dataloader_num_workers": 4, "dataloader_pin_memory": True}),
    "compile_no_liger": ({"torch_compile": True, "enable_liger_kernel": False}, {}),
    "compile_liger_no_ds": ({"torch_compile": True, "zero_stage": None}, {}),
    "fa2": ({"flash_attn": "fa2"}, {}),
    # LLaMA-Factory's pure_bf16: no autocast, the LoRA weights and AdamW states in bf16 (not fp32): fewer casts, less
    # precision in the update. bf16 (AMP) off, as LlamaBoard's "pure_bf16" compute type sets it.
    "pure_bf16": ({"bf16": False}, {"pure_bf16": True}),
    # LLaMA-Factory's FP8 (Accelerate + torchao Float8Linear, rowwise scales; embeddings and lm_head stay bf16): the
    # frozen base projections' GEMMs in e4m3 (e5m2 gradients). Needs torchao (carried as a wheel: the image lacks it).
    # With transformers 5.x these two are bf16 runs: TrainingArguments reads ACCELERATE_MIXED_PRECISION when it is
    # built and bf16 overrides it, then the Trainer hands mixed_precision to Accelerate, so the variable LLaMA-Factory
    # sets later changes nothing (its log: "Accelerate FP8 status - enabled: False").
    "fp8": ({}, {"fp8": True, "fp8_backend": "torchao"}),
    "fp8_no_ds": ({"zero_stage": None}, {"fp8": True, "fp8_backend": "torchao"}),
    "fp8_compile_no_liger": ({"torch_compile": True, "enable_liger_kernel": False, "zero_stage": None},
                             {"fp8": True, "fp8_backend": "torchao"}),
    # FP8 that engages: the variable set in the launch environment (before TrainingArguments reads it) and bf16 off
    # (it would override it); Accelerate then autocasts to bf16 as before (native AMP for fp8) and converts the
    # Linear layers with its own defaults (LLaMA-Factory's rowwise recipe never reaches it: the Trainer passes no
    # kwargs handlers): tensorwise scales, not the first or last Linear, dimensions divisible by 16 (so not the
    # r=8 LoRA matrices). Beside it P without DeepSpeed; then with ZeRO-2 (its plugin takes the "fp8" precision).
    "prev_no_ds": ({"zero_stage": None}, {}),
    "fp8_env_no_ds": ({"bf16": False, "zero_stage": None}, {"fp8": True, "fp8_backend": "torchao"}),
    "fp8_env": ({"bf16": False}, {"fp8": True, "fp8_backend": "torchao"}),
}
KNOB_ENV = {n: {"ACCELERATE_MIXED_PRECISION": "fp8"} for n in ("fp8_env_no_ds", "fp8_env")}
results: dict = {}
phase_name = ["setup"]


def save() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"results-{phase_name[0]}.json").write_text(json.dumps(results, indent=1, default=str))


def left() -> float:
    return BUDGET - (time.monotonic() - T0)


class GpuSampler(Poller):
    """SM clock (MHz) and board power (W) of GPU 0 from nvidia-smi, once a second."""

    interval = 1.0

    def __init__(self) -> None:
        super().__init__()
        self.samples: list[tuple[float, float, float]] = []  # (monotonic time, MHz, W)

    def poll(self) -> None:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                  "-i", "0"], capture_output=True, text=True, timeout=5).stdout
            c, p = (float(x) for x in out.split(","))
        except (OSError, ValueError, subprocess.SubprocessError):
            return
        self.samples.append((time.monotonic(), c, p))

    def medians(self, start: float | None, end: float | None) -> tuple[float | None, float | None]:
        """Median SM clock and power over [start, end] (the steady steps: start-up would drag power down)."""
        inside = [(c, p) for t, c, p in self.samples if start is not None and end is not None and start <= t <= end]
        if not inside:
            return None, None
        return statistics.median(c for c, _ in inside), statistics.median(p for _, p in inside)


def setup() -> tuple[Path, Path]:
    t = time.monotonic()
    model_dir, data_dir = WORK / "m8b", WORK / "data"
    mv.build_model(model_dir)
    mv.build_dataset(data_dir, model_dir, SEQ)
    for f in model_dir.glob("*.safetensors"):  # warm the page cache: the first run after a write stalled once
        with open(f, "rb") as fh:
            while fh.read(1 << 26):
                pass
    results["setup_s"] = round(time.monotonic() - t, 1)
    return model_dir, data_dir


def config_for(model_dir: Path, data_dir: Path, changes: dict, steps: int = STEPS, seq: int = SEQ, **extra):
    base = mv.recipe(model_dir, data_dir, seq, steps).model_copy(update={"cutoff_len": 1024, "save_steps": 10**9})
    if os.environ.get("KN_MAX_SAMPLES"):  # a smaller epoch: its short last step (a new shape) comes sooner
        base = base.model_copy(update={"max_samples": int(os.environ["KN_MAX_SAMPLES"])})
    return base.model_copy(update={**changes, **extra})


def run(name: str, config, yaml_extra: dict | None = None, *, launcher: str = "bare", timeout: float = 240,
        sample_tokens: float | None = SEQ, env_extra: dict | None = None, token_count: str = "all") -> dict:
    from hipwizard.train.run.rundir import save_run_dir

    if left() < 70:
        results.setdefault("skipped_runs", []).append(f"{name} {launcher}: time budget")
        save()
        return {}
    run_dir = WORK / "runs" / f"{len(list((WORK / 'runs').glob('*'))) if (WORK / 'runs').is_dir() else 0:02d}-{name}"
    save_run_dir(run_dir, config)
    if yaml_extra:
        with open(run_dir / "config.yaml", "a") as fh:
            fh.write("".join(f"{k}: {json.dumps(v)}\n" for k, v in yaml_extra.items()))
    env = dict(os.environ, RECORD_VRAM="1", CUDA_VISIBLE_DEVICES="0", **(env_extra or {}))
    if config.uses_deepspeed:  # bare llamafactory-cli needs torchrun for DeepSpeed (the launcher sets it)
        env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")
    timeout = min(timeout, max(30.0, left() + 40.0))  # the device call has a hard limit
    t = time.monotonic()
    code = None
    with StepClock(run_dir / "output" / "trainer_log.jsonl") as clock, mv.DevicePeak() as peak, GpuSampler() as gpu:
        if launcher == "hipwizard":
            from hipwizard.train.run.launcher import LaunchOptions
            from hipwizard.train.run.runs import is_running
            from hipwizard.train.services import launch
            from hipwizard.workspace import Workspace

            manifest = launch(Workspace.open(WORK / "ws"), run_dir, LaunchOptions(gpus=[0], platform="cuda")).manifest
            while is_running(manifest) and time.monotonic() - t < timeout:
                time.sleep(0.05)
        else:
            with open(run_dir / "train.log", "w") as log:
                proc = subprocess.Popen([shutil.which("llamafactory-cli") or "llamafactory-cli", "train", "config.yaml"],
                                        cwd=run_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
                try:
                    code = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = "timeout"
    rate = steady_rate_of(clock.arrivals, config.effective_batch(1) * SEQ, WARMUP, rows=clock.rows, run_dir=run_dir,
                          sample_tokens=sample_tokens, token_count=token_count)
    losses = {r["current_steps"]: r["loss"] for r in clock.rows if "loss" in r and "current_steps" in r}
    steps = sorted(clock.arrivals)
    gaps = [clock.arrivals[b] - clock.arrivals[a] for a, b in zip(steps, steps[1:], strict=False) if a >= WARMUP]
    clock_mhz, power_w = gpu.medians(clock.arrivals.get(WARMUP), clock.arrivals[steps[-1]] if steps else None)
    row = {"name": name, "launcher": launcher, "exit": code, "wall_s": round(time.monotonic() - t, 1),
           "steps": len(steps), **rate_fields(rate),
           "median_step_s": round(statistics.median(gaps), 4) if gaps else None,
           "max_step_s": round(max(gaps), 4) if gaps else None,
           "first_step_s": round(clock.arrivals[steps[0]] - t, 1) if steps else None,
           "peak_gib": round(peak.peak_mib / 1024, 2), "sm_clock_mhz_median": clock_mhz,
           "power_w_median": power_w, "losses": losses,
           "num_examples": _num_examples(run_dir),
           "yaml_extra": yaml_extra or {}, "changes": {k: v for k, v in config.model_dump().items()
                                                        if k in ("zero_stage", "enable_liger_kernel", "torch_compile",
                                                                 "flash_attn", "per_device_train_batch_size",
                                                                 "gradient_accumulation_steps", "packing", "neat_packing",
                                                                 "disable_gradient_checkpointing")}}
    if (yaml_extra or {}).get("fp8"):  # whether FP8 engaged, in LLaMA-Factory's own words
        log = run_dir / "train.log"
        text = log.read_text(errors="replace") if log.is_file() else ""
        row["fp8_lines"] = [ln[-160:] for ln in text.splitlines() if "FP8 status" in ln or "Float8" in ln][:4]
    if not steps or (code not in (0, None)):
        logs = sorted(run_dir.glob("*.log")) + sorted(run_dir.glob("output/*.log"))
        tail = logs[0].read_text(errors="replace").splitlines()[-40:] if logs else []
        row["log_tail"] = [ln for ln in tail if ln.strip()][-25:]
    results.setdefault("runs", []).append(row)
    print(name, launcher, json.dumps({k: v for k, v in row.items() if k not in ("losses", "log_tail")}), flush=True)
    save()
    return row


def _num_examples(run_dir: Path) -> int | None:
    """The trainer's "Num examples = N" (after packing: the packs) from the run's log."""
    import re

    for log in sorted(run_dir.glob("*.log")):
        if m := re.search(r"Num examples = ([\d,]+)", log.read_text(errors="replace")):
            return int(m.group(1).replace(",", ""))
    return None


def phase_bisect(model_dir: Path, data_dir: Path) -> None:
    proc = subprocess.run([PY, str(ROOT / "benchmarks" / "liger_compile_bisect.py")], capture_output=True, text=True,
                          timeout=max(60, min(300, left())))
    try:
        results["bisect"] = json.loads(proc.stdout)
    except ValueError:
        results["bisect"] = {"exit": proc.returncode, "stderr": proc.stderr[-3000:]}
    print(proc.stderr[-3000:], flush=True)
    save()


def phase_knobs(model_dir: Path, data_dir: Path) -> None:
    """P, then each knob; gains are P's median step time over the knob's (robust to one stalled step, which moved
    the mean rate by 2% in a 40-step run). $KN_ONLY: the knobs to run; $KN_PREV_MEDIAN_S: P's median step measured
    earlier on this machine (P is then not re-run)."""
    import importlib.util

    only = [n for n in os.environ.get("KN_ONLY", "").split(",") if n]
    if os.environ.get("KN_PREV_MEDIAN_S"):
        base = float(os.environ["KN_PREV_MEDIAN_S"])
        results["prev_median_s_given"] = base
    else:
        base = run("prev_pick", config_for(model_dir, data_dir, PREV)).get("median_step_s") or 0
    for name in only or list(KNOBS):  # $KN_ONLY's order: the knob that matters most first
        changes, extra = KNOBS[name]
        if name.startswith("fp8") and importlib.util.find_spec("torchao") is None:
            results.setdefault("skipped", {})[name] = "torchao is not installed (carry its wheel in .whl/)"
            continue
        if name == "fa2" and importlib.util.find_spec("flash_attn") is None:
            results.setdefault("skipped", {})[name] = "flash_attn is not installed in the image"
            continue
        if left() < (200 if "compile" in name else 90):
            results.setdefault("skipped", {})[name] = "time budget"
            continue
        run(name, config_for(model_dir, data_dir, {**PREV, **changes}), extra,
            timeout=min(300, left()) if "compile" in name else 200, env_extra=KNOB_ENV.get(name))
    gains = {r["name"]: round(base / r["median_step_s"], 4) for r in results.get("runs", [])
             if r["name"] != "prev_pick" and r.get("median_step_s") and base and r.get("exit") in (0, None)}
    results["gain_over_prev"] = gains
    save()
    path = WORK / "knobs.json"
    old = json.loads(path.read_text())["gains"] if path.is_file() else {}
    gains = {**old, **gains}
    path.write_text(json.dumps({"gains": gains, "knobs": {n: KNOBS[n] for n in gains}}))


def new_pick() -> tuple[dict, dict, str]:
    """P plus every knob that ran and gained > 1% (compile with and without Liger are alternatives: the better)."""
    if os.environ.get("NEW_PICK"):
        spec = json.loads(os.environ["NEW_PICK"])
        return {**PREV, **spec.get("changes", {})}, spec.get("extra", {}), "NEW_PICK"
    path = WORK / "knobs.json"
    if not path.is_file():
        return dict(PREV), {}, "no knobs measured: P"
    data = json.loads(path.read_text())
    winners = sorted((g, n) for n, g in data["gains"].items() if g > 1.01)
    changes, extra, used = dict(PREV), {}, []
    for _g, n in reversed(winners):
        if "compile" in n and any("compile" in u for u in used):
            continue
        c, e = data["knobs"][n]
        changes.update(c)
        extra.update(e)
        used.append(n)
    return changes, extra, "P + " + (", ".join(used) or "nothing (no knob gained > 1%)")


def phase_proof(model_dir: Path, data_dir: Path) -> None:
    changes, extra, why = new_pick()
    results["new_pick"] = {"changes": changes, "extra": extra, "why": why}
    slow = changes.get("torch_compile")
    run("new_pick", config_for(model_dir, data_dir, changes), extra, timeout=300 if slow else 200)
    run("new_pick", config_for(model_dir, data_dir, changes), extra, launcher="hipwizard", timeout=300 if slow else 200)
    if changes != PREV:
        run("prev_pick", config_for(model_dir, data_dir, PREV))
    run("recipe", config_for(model_dir, data_dir, RECIPE, steps=12), timeout=200)
    for launcher in ("hipwizard", "bare"):
        if left() < (260 if slow else 110):
            results.setdefault("skipped", []).append(f"new_pick {launcher} (second pair): time budget")
            break
        run("new_pick", config_for(model_dir, data_dir, changes), extra, launcher=launcher,
            timeout=300 if slow else 200)
    save()


def variable_dataset(data_dir: Path, model_dir: Path, n: int = 600) -> float:
    """Alpaca records of 100-1,000 tokens (uniform); returns the mean length in tokens."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(1)
    words = ["kernel", "wavefront", "tensor", "gradient", "adapter", "layer", "token", "batch", "rocm", "port"]
    records, lengths = [], []
    for i in range(n):
        want = rng.randint(100, 1000) - 40
        body = [rng.choice(words) for _ in range(want)]
        while len(tok(" ".join(body)).input_ids) > want:
            body = body[: max(1, len(body) - 8)]
        lengths.append(len(tok(" ".join(body)).input_ids) + 40)
        records.append({"instruction": f"Summarise note {i}.", "input": "", "output": " ".join(body)})
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / f"{mv.DATASET}.json").write_text(json.dumps(records))
    (data_dir / "dataset_info.json").write_text(json.dumps({mv.DATASET: {"file_name": f"{mv.DATASET}.json"}}))
    return sum(lengths) / len(lengths)


def phase_packing(model_dir: Path, data_dir: Path) -> None:
    """Variable-length data three ways over the same 600 samples, side by side: unpacked (each batch padded to its
    longest), bucketed (the HF Trainer's length-grouped sampler: batches of similar lengths, 16 samples a step as
    before) and neat packing. Real tokens: the trainer's ``non_padding`` count where samples are not packed; for
    packs, the dataset's real tokens over the packs the trainer reports (``Num examples``) x packs per second."""
    var_dir = WORK / "data-var"
    mean = variable_dataset(var_dir, model_dir)
    results["variable_mean_tokens"] = round(mean, 1)
    results["variable_real_tokens"] = round(mean * 600)
    bucket = {"train_sampling_strategy": "group_by_length"}  # transformers >= 5.2; 4.x: group_by_length: true
    for name, extra, yaml_extra, count in (
            ("unpacked_var", {}, {}, "non_padding"),
            ("bucketed_var", {}, bucket, "non_padding"),
            ("neat_packing_var", {"packing": True, "neat_packing": True}, {}, "all")):
        if os.environ.get("KN_VAR_RUNS") and name not in os.environ["KN_VAR_RUNS"].split(","):
            continue
        if left() < 100:
            results.setdefault("skipped", []).append(f"{name}: time budget")
            continue
        cfg = config_for(model_dir, var_dir, PREV, steps=30, **extra)
        row = run(name, cfg, {"include_num_input_tokens_seen": count, **yaml_extra},
                  sample_tokens=None if extra else mean, timeout=200, token_count=count)
        if extra and row.get("num_examples") and row.get("samples_per_s"):
            row["real_tokens_per_pack"] = round(mean * 600 / row["num_examples"], 1)
            row["real_tokens_per_s_from_packs"] = round(row["samples_per_s"] * mean * 600 / row["num_examples"], 1)
            save()
    save()


def main() -> int:
    phases = sys.argv[sys.argv.index("--phases") + 1] if "--phases" in sys.argv else "bisect,knobs"
    WORK.mkdir(parents=True, exist_ok=True)
    model_dir, data_dir = setup()
    for name in phases.split(","):
        phase_name[0] = name
        results.clear()
        results["started_s"] = round(time.monotonic() - T0, 1)
        {"bisect": phase_bisect, "knobs": phase_knobs, "proof": phase_proof,
         "packing": phase_packing}[name](model_dir, data_dir)
        results["total_s"] = round(time.monotonic() - T0, 1)
        save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
