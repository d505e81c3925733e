"""The embedded demo's tiny Llama: model, tokenizer and an alpaca dataset, built offline in seconds.

Model hubs may be unreachable, so hipwizard builds its own: a 2-layer Llama with random weights
(seeded), a byte-level BPE tokenizer trained on the demo dataset with the llama3 template's special
tokens, and a synthetic alpaca-format dataset with ``dataset_info.json``. Cached in the user's cache
directory; a ``READY`` marker written last makes a half-built cache invisible.

``build`` is THE demo builder: the parity step calls it in its worker process, and the Train step runs it
in a subprocess through ``hipwizard.train.demo.ensure_demo_built`` (the UI process never imports torch):
``python -m hipwizard.demo_model [--out DIR]`` prints the folder as JSON. What the demo trains is the
``demo`` preset in ``assets/train_presets.yaml``. torch/transformers are imported inside ``build`` only.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hipwizard.atomic import atomic_write_json, atomic_write_text
from hipwizard.paths import cache_dir

DEMO_VERSION = 1
DATASET_NAME = "hipwizard_demo"
LLAMA3_SPECIAL = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
    "<|pad|>",
]

# Shape of the tiny model; small enough to train on a CPU in seconds.
TINY_CONFIG: dict[str, Any] = dict(  # LlamaConfig keyword arguments
    hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
    tie_word_embeddings=False,
)


@dataclass(frozen=True)
class DemoAssets:
    root: Path

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def dataset_dir(self) -> Path:
        return self.root / "data"

    @property
    def ready(self) -> bool:
        return (self.root / "READY").is_file()


def default_root() -> Path:
    return cache_dir() / f"demo-v{DEMO_VERSION}"


def demo_assets(root: Path | None = None) -> DemoAssets:
    """Where the demo lives (it may not be built yet: see ``.ready``)."""
    return DemoAssets(Path(root) if root else default_root())


def _records(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    colours = ["red", "green", "blue", "amber", "violet", "teal", "silver", "golden"]
    things = ["kernel", "wavefront", "tensor", "gradient", "batch", "adapter", "layer", "token"]
    verbs = ["port", "compile", "profile", "tune", "launch", "shard", "check", "train"]
    out = []
    for i in range(n):
        a, b, v = rng.choice(colours), rng.choice(things), rng.choice(verbs)
        x, y = rng.randint(1, 60), rng.randint(1, 60)
        out.append({
            "instruction": f"How do I {v} the {a} {b} number {i}?",
            "input": f"{x} plus {y}" if i % 3 == 0 else "",
            "output": (f"{x} plus {y} is {x + y}. " if i % 3 == 0 else "")
            + f"To {v} the {a} {b}, first check it on the reference, then {v} it on the MI300X.",
        })
    return out


def write_dataset(folder: Path, records: list[dict[str, str]], name: str = DATASET_NAME) -> None:
    """An alpaca-format dataset and the ``dataset_info.json`` LLaMA-Factory reads it through."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / f"{name}.json", json.dumps(records, indent=1))
    atomic_write_json(folder / "dataset_info.json", {name: {"file_name": f"{name}.json"}})


def build_tokenizer(corpus: list[str], vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``corpus`` with the llama3 template's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=LLAMA3_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|pad|>",
    )


def corpus_of(records: list[dict[str, str]]) -> list[str]:
    return [r["instruction"] + " " + r["input"] + " " + r["output"] for r in records]


def build(root: Path | None = None, *, n_records: int = 256, force: bool = False) -> DemoAssets:
    """Build (or reuse) the demo model, tokenizer and dataset. Returns where they are."""
    assets = demo_assets(root)
    if assets.ready and not force:
        return assets
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tmp = assets.root.with_name(assets.root.name + ".building")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "model").mkdir(parents=True)

    records = _records(n_records)
    write_dataset(tmp / "data", records)
    fast = build_tokenizer(corpus_of(records))
    fast.save_pretrained(tmp / "model")

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast), bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id, **TINY_CONFIG,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(tmp / "model", safe_serialization=True)

    atomic_write_text(tmp / "READY", f"demo v{DEMO_VERSION}\n")
    if assets.root.exists():
        shutil.rmtree(assets.root)
    tmp.rename(assets.root)
    return assets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hipwizard.demo_model")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    assets = build(args.out, force=args.force)
    print(json.dumps({"root": str(assets.root), "model": str(assets.model_dir), "dataset_dir": str(assets.dataset_dir),
                      "dataset": DATASET_NAME}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
