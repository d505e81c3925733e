"""Sequence-length bucketing (issue 34 item 2): the padding the HF Trainer's length-grouped sampler removes, measured
by real ``llamafactory-cli train`` runs on this machine's CPU (the tiny demo model), against random batches.

Four runs over the same variable-length samples (lengths uniform over a 1:10 range, like the GPU bench's 100-1,000
tokens), one epoch at BATCH a step, the same seed: random and length-grouped order, each once counting
``include_num_input_tokens_seen: all`` (the tensors fed: padding included) and once ``non_padding`` (real tokens).
Runs counting the same order see the same batches, so padded / real tokens is the work per real token each order
costs. Step time on the tiny CPU model is not the GPU's (a step there is dominated by fixed costs): the GPU
numbers are ``knobs_gpu.py``'s packing phase. Every YAML is written by hipwizard's ``save_run_dir`` with
``group_by_length`` on or off (so the key is the one the installed transformers takes).

    .venv/bin/python benchmarks/length_grouped.py [--samples 600] [--batch 16] [--short 24] [--long 240]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hipwizard.train.config.train_config import TrainConfig  # noqa: E402
from hipwizard.train.demo import DEMO_ENV, demo_run_config, ensure_demo_built  # noqa: E402
from hipwizard.train.run.rundir import save_run_dir  # noqa: E402


def dataset(folder: Path, tokenizer_dir: Path, n: int, short: int, long: int) -> list[int]:
    """``n`` alpaca records whose answers have short..long tokens (uniform); returns their token lengths."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    rng = random.Random(7)
    words = ["kernel", "wave", "tensor", "grad", "adapter", "layer", "token", "batch", "rocm", "port"]
    records, lengths = [], []
    for i in range(n):
        want = rng.randint(short, long)
        body = [rng.choice(words) for _ in range(want)]
        while len(tok.encode(" ".join(body)).ids) > want:
            body.pop()
        lengths.append(len(tok.encode(" ".join(body)).ids))
        records.append({"instruction": f"Note {i}.", "input": "", "output": " ".join(body)})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "var.json").write_text(json.dumps(records))
    (folder / "dataset_info.json").write_text(json.dumps({"var": {"file_name": "var.json"}}))
    return lengths


def run(work: Path, name: str, data: Path, root: Path, *, grouped: bool, count: str, samples: int, batch: int,
        cutoff: int) -> dict:
    config, document = demo_run_config(root)
    steps = -(-samples // batch)
    config = TrainConfig.model_validate({**config.model_dump(exclude_unset=True), "dataset": "var",
                                         "dataset_dir": str(data), "max_samples": samples, "max_steps": steps,
                                         "per_device_train_batch_size": batch, "cutoff_len": cutoff,
                                         "group_by_length": grouped})
    document["include_num_input_tokens_seen"] = count
    folder = save_run_dir(work / name, config, document).path
    t = time.monotonic()
    with open(folder / "train.log", "w") as log:
        code = subprocess.call([shutil.which("llamafactory-cli") or "llamafactory-cli", "train", "config.yaml"],
                               cwd=folder, stdout=log, stderr=subprocess.STDOUT, env={**_env(), **DEMO_ENV})
    rows = [json.loads(x) for x in (folder / "output" / "trainer_log.jsonl").read_text().splitlines()] \
        if code == 0 else []
    tokens = [r["total_tokens"] for r in rows if "loss" in r and "total_tokens" in r]
    losses = [round(r["loss"], 4) for r in rows if "loss" in r]
    return {"exit": code, "wall_s": round(time.monotonic() - t, 1), "steps": len(tokens),
            "tokens": tokens[-1] if tokens else None, "losses": losses}


def _env() -> dict:
    import os

    return dict(os.environ, CUDA_VISIBLE_DEVICES="")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--short", type=int, default=24)
    ap.add_argument("--long", type=int, default=240)
    args = ap.parse_args()
    root = ensure_demo_built().root
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lengths = dataset(work / "data", root / "model", args.samples, args.short, args.long)
        cutoff = max(lengths) + 64  # nothing truncated: the prompt and template tokens come on top
        out: dict = {"samples": args.samples, "batch": args.batch, "answer_tokens": [min(lengths), max(lengths)],
                     "mean_answer_tokens": round(sum(lengths) / len(lengths), 1), "runs": {}}
        for grouped in (False, True):
            for count in ("all", "non_padding"):
                name = f"{'grouped' if grouped else 'random'}-{count}"
                out["runs"][name] = run(work, name, work / "data", root, grouped=grouped, count=count,
                                        samples=args.samples, batch=args.batch, cutoff=cutoff)
                print(name, {k: v for k, v in out["runs"][name].items() if k != "losses"}, flush=True)
    r = out["runs"]
    for order in ("random", "grouped"):
        fed, real = r[f"{order}-all"]["tokens"], r[f"{order}-non_padding"]["tokens"]
        if fed and real:
            out[f"{order}_fed_per_real"] = round(fed / real, 3)
    if "random_fed_per_real" in out and "grouped_fed_per_real" in out:
        out["work_per_real_token_random_over_grouped"] = round(out["random_fed_per_real"] / out["grouped_fed_per_real"], 3)
    same = r["random-all"]["losses"] == r["random-non_padding"]["losses"]
    out["counting_changes_nothing_else"] = same and r["grouped-all"]["losses"] == r["grouped-non_padding"]["losses"]
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
