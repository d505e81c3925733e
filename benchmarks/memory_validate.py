"""Validate hipwizard's memory estimate against real `llamafactory-cli train` runs on one GPU.

Run on the GPU box (ROCm or CUDA), from the repository root:

    python benchmarks/memory_validate.py --work /data/hw-validate            # all configs
    python benchmarks/memory_validate.py --work /data/hw-validate --dry-run  # predictions only
    python benchmarks/memory_validate.py --work /data/hw-validate --out-of-sample  # configs never fitted

It builds (once) a Llama-3-8B-shaped model with random bf16 weights (hidden 4096, 32 layers, GQA 32/8,
vocab 128,256) and the demo tokenizer, and an alpaca dataset whose samples are all ~``--seq-len`` tokens,
then for each config writes a run directory with hipwizard's own ``save_run_dir`` and runs
``llamafactory-cli train`` with RECORD_VRAM=1 for a few steps. Measured:

- ``allocated``: the highest ``vram_allocated`` in trainer_log.jsonl (torch max_memory_allocated, GiB),
- ``device peak``: the highest device memory in use while it ran (nvidia-smi / amd-smi / rocm-smi sampled
  every 0.2 s), minus what was in use before it started — what decides an OOM.

It prints predicted vs measured and the error ratio for each, and writes everything to ``results.json``.
Target (issue 6): |predicted - device peak| / device peak <= 10% on each config.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipwizard.train.config.train_config import TrainConfig  # noqa: E402
from hipwizard.train.planning.memory import estimate_memory  # noqa: E402
from hipwizard.train.planning.model_shape import load_shape  # noqa: E402
from hipwizard.train.planning.throughput import estimate_throughput  # noqa: E402
from hipwizard.train.run.rundir import save_run_dir  # noqa: E402

SHAPE_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=8, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
                tie_word_embeddings=False, vocab_size=128256)
DATASET = "validate_fixed_len"

# name -> config changes on top of the recipe (LoRA q_proj,v_proj r8, bf16, sdpa, effective batch 16).
CONFIGS: dict[str, dict] = {
    # measured on the H200 and fitted in-sample (tests/fixtures/train/h200_measured.json)
    "lora-plain-bs4-ckpt": dict(zero_stage=None, per_device_train_batch_size=4, gradient_accumulation_steps=4),
    "lora-zero2-bs4-ckpt": dict(zero_stage=2, per_device_train_batch_size=4, gradient_accumulation_steps=4),
    "lora-zero3-bs4-ckpt": dict(zero_stage=3, per_device_train_batch_size=4, gradient_accumulation_steps=4),
    "lora-zero3-offload-bs4-ckpt": dict(zero_stage=3, offload_optimizer=True, offload_param=True,
                                        per_device_train_batch_size=4, gradient_accumulation_steps=4),
    "lora-plain-bs4-nockpt": dict(zero_stage=None, disable_gradient_checkpointing=True,
                                  per_device_train_batch_size=4, gradient_accumulation_steps=4),
    "lora-plain-bs8-nockpt": dict(zero_stage=None, disable_gradient_checkpointing=True,
                                  per_device_train_batch_size=8, gradient_accumulation_steps=2),
    "lora-plain-bs16-nockpt": dict(zero_stage=None, disable_gradient_checkpointing=True,
                                   per_device_train_batch_size=16, gradient_accumulation_steps=1),
    # never measured: the out-of-sample check of the refit (memory and throughput)
    "lora-zero2-bs8-nockpt": dict(zero_stage=2, disable_gradient_checkpointing=True,
                                  per_device_train_batch_size=8, gradient_accumulation_steps=2),
    "lora-plain-bs16-ckpt": dict(zero_stage=None, per_device_train_batch_size=16, gradient_accumulation_steps=1),
    "lora-zero3-bs8-nockpt": dict(zero_stage=3, disable_gradient_checkpointing=True,
                                  per_device_train_batch_size=8, gradient_accumulation_steps=2),
    "lora-plain-bs2-ckpt": dict(zero_stage=None, per_device_train_batch_size=2, gradient_accumulation_steps=8),
}
FITTED = frozenset(list(CONFIGS)[:7])
OUT_OF_SAMPLE = tuple(name for name in CONFIGS if name not in FITTED)


def build_model(model_dir: Path) -> None:
    """Random-weight 8B-shaped Llama + the demo tokenizer (built on the GPU: seconds, not minutes)."""
    if (model_dir / "config.json").is_file() and any(model_dir.glob("*.safetensors")):
        return
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from hipwizard.demo_model import build as build_demo

    demo = build_demo(model_dir.parent / "demo")
    tok = AutoTokenizer.from_pretrained(demo.model_dir)
    config = LlamaConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, **SHAPE_8B)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(model_dir, safe_serialization=True)
    tok.save_pretrained(model_dir)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()


def build_dataset(data_dir: Path, model_dir: Path, seq_len: int, n: int = 600) -> None:
    """Alpaca records that each tokenise (with the llama3 template) to about ``seq_len`` tokens."""
    if (data_dir / "dataset_info.json").is_file():
        return
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(0)
    words = ["kernel", "wavefront", "tensor", "gradient", "adapter", "layer", "token", "batch", "rocm", "port"]
    records = []
    for i in range(n):
        body = []
        while len(tok(" ".join(body)).input_ids) < seq_len - 40:  # 40: template and instruction tokens
            body.extend(rng.choice(words) for _ in range(32))
        while len(tok(" ".join(body)).input_ids) > seq_len - 40:
            body.pop()  # trim the overshoot: every sample the same length, so padding adds nothing
        records.append({"instruction": f"Summarise note {i}.", "input": "", "output": " ".join(body)})
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / f"{DATASET}.json").write_text(json.dumps(records))
    (data_dir / "dataset_info.json").write_text(json.dumps({DATASET: {"file_name": f"{DATASET}.json"}}))


class DevicePeak:
    """Samples device memory in use (MiB) on GPU 0 with whichever vendor tool answers."""

    def __init__(self) -> None:
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def used_mib() -> float | None:
        probes = [
            (["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
             lambda out: float(out.split()[0])),
            (["amd-smi", "metric", "--mem-usage", "--gpu", "0", "--json"], _amdsmi_used),
            (["rocm-smi", "--showmeminfo", "vram", "--json"], _rocmsmi_used),
        ]
        for argv, parse in probes:
            if shutil.which(argv[0]) is None:
                continue
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
                return parse(out)
            except Exception:  # noqa: BLE001 - try the next tool
                continue
        return None

    def _loop(self) -> None:
        while not self._stop.is_set():
            used = self.used_mib()
            if used is not None:
                self.peak_mib = max(self.peak_mib, used)
            self._stop.wait(0.2)

    def __enter__(self) -> "DevicePeak":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _amdsmi_used(out: str) -> float:
    data = json.loads(out)
    gpu = data[0] if isinstance(data, list) else data
    used = gpu.get("mem_usage", gpu).get("used_vram")
    value = used.get("value") if isinstance(used, dict) else used
    unit = used.get("unit", "MB") if isinstance(used, dict) else "MB"
    return float(value) * (1024 if unit.upper().startswith("G") else 1)


def _rocmsmi_used(out: str) -> float:
    card = next(iter(json.loads(out).values()))
    key = next(k for k in card if "Used" in k and "VRAM" in k)
    return float(card[key]) / 2**20


def recipe(model_dir: Path, data_dir: Path, seq_len: int, steps: int, **changes) -> TrainConfig:
    values = dict(
        model_name_or_path=str(model_dir), stage="sft", do_train=True, finetuning_type="lora", lora_rank=8,
        lora_target="q_proj,v_proj", dataset=DATASET, dataset_dir=str(data_dir), template="llama3",
        cutoff_len=seq_len + 64, max_samples=500, preprocessing_num_workers=8, learning_rate=5e-5,
        lr_scheduler_type="cosine", num_train_epochs=1.0, max_steps=steps, bf16=True, flash_attn="sdpa",
        output_dir="output", logging_steps=1, save_steps=100000, overwrite_output_dir=True, report_to="none",
    )
    values.update(changes)
    return TrainConfig(**values)


def run_one(run_dir: Path, config: TrainConfig, timeout: float, seq_len: int) -> dict:
    save_run_dir(run_dir, config)
    env = dict(os.environ, RECORD_VRAM="1", CUDA_VISIBLE_DEVICES="0", HIP_VISIBLE_DEVICES="0",
               DISABLE_VERSION_CHECK="1", HF_HUB_OFFLINE="1")
    if config.uses_deepspeed:
        env.update(FORCE_TORCHRUN="1", NPROC_PER_NODE="1")
    before = DevicePeak.used_mib() or 0.0
    start = time.monotonic()
    from gpu_tour_clock import StepClock, steady_tokens_per_s

    clock = StepClock(run_dir / "output" / "trainer_log.jsonl")
    with clock, DevicePeak() as peak, open(run_dir / "train.log", "w") as log:
        proc = subprocess.run(["llamafactory-cli", "train", "config.yaml"], cwd=run_dir, env=env, stdout=log,
                              stderr=subprocess.STDOUT, timeout=timeout)
    rows = []
    log_path = run_dir / "output" / "trainer_log.jsonl"
    if log_path.is_file():
        rows = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    tps = [r["throughput"] for r in rows if "throughput" in r]
    return {
        "returncode": proc.returncode, "seconds": round(time.monotonic() - start, 1),
        "allocated_gib": max((r.get("vram_allocated", 0) for r in rows), default=None),
        "reserved_gib": max((r.get("vram_reserved", 0) for r in rows), default=None),
        "device_peak_gib": round((peak.peak_mib - before) / 1024, 2) if peak.peak_mib else None,
        "tokens_per_s": tps[-1] if tps else None,
        "steady_tokens_per_s": steady_tokens_per_s(
            clock.arrivals, config.per_device_train_batch_size * config.gradient_accumulation_steps * seq_len, 2,
            rows=clock.rows, run_dir=run_dir, sample_tokens=seq_len),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for the model, data and runs (~20 GB)")
    parser.add_argument("--seq-len", type=int, default=830)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="run only these configs")
    parser.add_argument("--out-of-sample", action="store_true",
                        help=f"run only the configs the model was not fitted to ({', '.join(OUT_OF_SAMPLE)})")
    parser.add_argument("--dry-run", action="store_true", help="print predictions; build and run nothing")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()

    model_dir, data_dir = args.work / "m8b", args.work / "data"
    if not args.dry_run:
        build_model(model_dir)
        build_dataset(data_dir, model_dir, args.seq_len)
    shape = (load_shape(str(model_dir)) if (model_dir / "config.json").is_file() else load_shape("meta-llama/Meta-Llama-3-8B")).shape
    results = {}
    print(f"{'config':<30} {'predicted':>9} {'device peak':>11} {'err':>7} {'pred tensors':>12} {'allocated':>9} "
          f"{'pred tok/s':>10} {'tok/s':>7}")
    names = args.only or (OUT_OF_SAMPLE if args.out_of_sample else CONFIGS)
    for name in names:
        config = recipe(model_dir, data_dir, args.seq_len, args.steps, **CONFIGS[name])
        # the dataset built here has fixed-length samples: no fragmentation allowance
        est = estimate_memory(config, shape, seq_len=args.seq_len, lengths="fixed")
        tensors = est.tensor_gib
        speed = estimate_throughput(config, shape, seq_len=args.seq_len).tokens_per_s
        row = {"predicted_gib": round(est.total_gib, 2), "predicted_tensors_gib": round(tensors, 2),
               "predicted_tokens_per_s": round(speed), "fitted": name in FITTED, "estimate": est.to_dict()}
        if not args.dry_run:
            row.update(run_one(args.work / "runs" / name, config, args.timeout, args.seq_len))
        peak = row.get("device_peak_gib")
        err = f"{100 * (est.total_gib - peak) / peak:+6.1f}%" if peak else "    –"
        print(f"{name:<30} {est.total_gib:9.1f} {peak if peak is not None else '–':>11} {err:>7} "
              f"{tensors:12.1f} {row.get('allocated_gib') or '–':>9} {speed:10.0f} "
              f"{round(row.get('steady_tokens_per_s') or 0) or '–':>7}" + ("" if name in FITTED else "  (out of sample)")
              + (f"  (exit {row['returncode']}, see runs/{name}/train.log)" if row.get("returncode") else ""))
        results[name] = row
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "results.json").write_text(json.dumps({"seq_len": args.seq_len, "results": results}, indent=2))
    print(f"results: {args.work / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
