"""Why Liger + ``torch_compile`` crashed on the H200 (issue 34 item 2): one Liger kernel at a time under torch.compile.

    python3 benchmarks/liger_compile_bisect.py [--layers 2] [--seq 830] [--batch 4] > bisect.json

A Llama-3-8B-wide model cut to ``--layers`` layers (hidden 4096, MLP 14336, GQA 32/8, vocab 128,256; random bf16
weights), LoRA r8 on q_proj,v_proj through PEFT as LLaMA-Factory builds it, Liger's llama patch applied with one
kernel on at a time (rope, rms_norm, swiglu, fused_linear_cross_entropy), all of them (LLaMA-Factory's
``enable_liger_kernel``), or none; each compiled with ``torch.compile`` (the default inductor backend, as the
Trainer's ``torch_compile: true`` does through accelerate) and run forward + backward three times. Each variant
is its own process (Liger patches transformers' classes process-wide; a CUDA fault poisons the context) and the
variants run side by side on the one GPU. One JSON object: per variant its exit code, seconds, the loss of each
step and the last lines of its error; plus eager (uncompiled) runs of the variants that failed, so a failure is
put on compile, not on the kernel itself. Versions of torch, triton, transformers, liger-kernel and peft are stamped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

VARIANTS = {
    "none": {},
    "rope": {"rope": True},
    "rms_norm": {"rms_norm": True},
    "swiglu": {"swiglu": True},
    "fused_linear_cross_entropy": {"fused_linear_cross_entropy": True},
    "all": {"rope": True, "rms_norm": True, "swiglu": True, "fused_linear_cross_entropy": True},
}
KERNELS = ("rope", "rms_norm", "swiglu", "cross_entropy", "fused_linear_cross_entropy")


def child(name: str, compiled: bool, layers: int, seq: int, batch: int) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    chosen = VARIANTS[name]
    if chosen:
        from liger_kernel.transformers import apply_liger_kernel_to_llama

        apply_liger_kernel_to_llama(**{k: bool(chosen.get(k, False)) for k in KERNELS})
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers, num_attention_heads=32,
                      num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0,
                      rms_norm_eps=1e-5, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    model.train()
    run = torch.compile(model) if compiled else model
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    losses = []
    for _ in range(3):
        out = run(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        losses.append(float(out.loss))
    print(json.dumps({"losses": losses}))


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] == "--child":
        child(args[1], args[2] == "compiled", int(args[3]), int(args[4]), int(args[5]))
        return 0

    def opt(flag: str, default: int) -> int:
        return int(args[args.index(flag) + 1]) if flag in args else default

    layers, seq, batch = opt("--layers", 2), opt("--seq", 830), opt("--batch", 4)
    env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    out: dict = {"versions": {}, "compiled": {}, "eager": {}, "shape": {"layers": layers, "seq": seq, "batch": batch}}
    for dist in ("torch", "triton", "transformers", "liger-kernel", "peft"):
        try:
            from importlib import metadata

            out["versions"][dist] = metadata.version(dist)
        except Exception:  # noqa: BLE001 - a missing one is recorded as missing
            out["versions"][dist] = None

    def launch(names, mode):
        procs = {}
        for n in names:
            procs[n] = (time.monotonic(), subprocess.Popen(
                [sys.executable, __file__, "--child", n, mode, str(layers), str(seq), str(batch)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        for n, (t0, p) in procs.items():
            try:
                so, se = p.communicate(timeout=240)
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
            row = {"exit": p.returncode, "s": round(time.monotonic() - t0, 1),
                   "error": [ln for ln in se.splitlines() if ln.strip()][-6:] if p.returncode else []}
            try:
                row.update(json.loads(so.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                pass
            out[mode][n] = row
            print(mode, n, json.dumps(row), file=sys.stderr, flush=True)

    launch(list(VARIANTS), "compiled")
    failed = [n for n, r in out["compiled"].items() if r["exit"] != 0]
    if failed:
        launch(failed, "eager")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
