"""Models and data for the GPU tour, built offline (model hubs are unreachable).

    python benchmarks/gpu_tour/make_assets.py 8b --out DIR       # Llama-3-8B-shaped, bf16, random, + data
    python benchmarks/gpu_tour/make_assets.py parity --out DIR   # a small Llama-shaped model for parity

The 8B model is built on the GPU when there is one (seconds instead of minutes of CPU init). Its dataset
is a synthetic alpaca set whose samples are ~830 tokens long under the llama3 template, like the
measurements recorded in shared/gpu-box/README.md. The parity model is built once on the CPU machine and
carried, because random init on two torch versions is not the same model (the capture's weights hash
proves both sides loaded the same files).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hipwizard.demo_model import _records, build_tokenizer, corpus_of, write_dataset  # noqa: E402

LLAMA3_8B = dict(
    hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
    vocab_size=128256, tie_word_embeddings=False,
)
PARITY_SHAPE = dict(
    hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
    num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=500000.0,
    tie_word_embeddings=False,
)


def long_records(n: int, target_words: int, seed: int = 1) -> list[dict[str, str]]:
    rng = random.Random(seed)
    base = _records(n, seed)
    words = " ".join(corpus_of(base)).split()
    for r in base:
        r["output"] = " ".join(rng.choice(words) for _ in range(target_words))
    return base


def build(kind: str, out: Path, n_records: int, target_words: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    records = long_records(n_records, target_words) if kind == "8b" else _records(n_records)
    tok = build_tokenizer(corpus_of(records), vocab_size=1024)
    (out / "model").mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out / "model")
    write_dataset(out / "data", records, name="synth")
    lengths = sorted(len(tok(corpus_of([r])[0])["input_ids"]) for r in records[:64])
    print(f"median sample length: {lengths[len(lengths) // 2]} tokens", flush=True)

    shape = dict(LLAMA3_8B if kind == "8b" else PARITY_SHAPE)
    shape.setdefault("vocab_size", len(tok))
    config = LlamaConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, **shape)
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() and kind == "8b" else "cpu"
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out / "model", safe_serialization=True)
    n = sum(p.numel() for p in model.parameters())
    print(f"built {kind}: {n / 1e9:.3f} B parameters on {device} -> {out / 'model'}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["8b", "parity"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--records", type=int, default=400)
    parser.add_argument("--words", type=int, default=660)
    args = parser.parse_args()
    build(args.kind, args.out, args.records, args.words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
