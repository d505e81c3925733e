"""Rebuild the batch a LLaMA-Factory run trained on at a given optimizer step, exactly as its trainer saw it.

Run as ``python -m hipwizard.parity.capture.step_batch RUN_DIR --step N --out FILE.safetensors`` (LLaMA-Factory, torch
and transformers load in that process only). The run's own ``config.yaml`` goes through LLaMA-Factory's
``run_exp`` — the same argument parsing, tokenizer, template, dataset processing, collator, trainer, seed and
accelerate-prepared dataloader as the run — and a callback takes over at ``on_train_begin``, before any
step: it walks the prepared dataloader the way the trainer's epoch loop does (``set_epoch(epoch)``, then
``gradient_accumulation_steps`` micro-batches per optimizer step, fewer for an epoch's last step) to the
micro-batches of step ``N``, writes them and stops the run. Nothing is trained and the run folder is not
touched (the trainer's output goes to a temporary folder).

A run of several processes (DDP: ``torchrun``, one rank per GPU) gave each rank its own shard of every epoch:
``--world-size W --rank R`` rebuilds rank R's micro-batches by letting accelerate itself shard the dataloader
as it did in the run (``prepare_data_loader`` with ``num_processes=W, process_index=R``; same sampler, seed and
even-batches filling), in this one process.

The file holds ``input/input_ids``, ``input/attention_mask`` (and ``input/labels``) of the step's micro-batches
concatenated along the batch dimension (padded to one length with the tokenizer's pad id, mask 0, label
-100), and ``hipwizard`` metadata: the run, the step, the epoch, the micro-batch sizes and the seed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from hipwizard.errors import UserError

FORMAT = "hipwizard-step-batch/1"


class _Found(Exception):
    """Raised from the callback once the batch is written: the run stops before its first step."""


def locate(step: int, micro_batches: int, accumulation: int) -> tuple[int, int, int]:
    """(epoch, first micro-batch index in that epoch, micro-batches of the step) of optimizer step ``step``
    (1-based), for an epoch of ``micro_batches`` micro-batches, as transformers' Trainer chunks it."""
    if step < 1:
        raise ValueError(f"step {step}: steps count from 1")
    per_epoch = math.ceil(micro_batches / accumulation)
    epoch, update = divmod(step - 1, per_epoch)
    first = update * accumulation
    remainder = micro_batches % accumulation or accumulation
    count = accumulation if update != per_epoch - 1 else remainder
    return epoch, first, count


def _concat(batches: list[dict], pad_id: int) -> dict:
    import torch  # heavy: torch

    width = max(int(b["input_ids"].shape[1]) for b in batches)
    out: dict[str, list] = {"input_ids": [], "attention_mask": [], "labels": []}
    for b in batches:
        n = width - int(b["input_ids"].shape[1])
        for key, fill in (("input_ids", pad_id), ("attention_mask", 0), ("labels", -100)):
            t = b.get(key)
            if t is None:
                continue
            t = t.detach().cpu()
            if n:
                t = torch.cat([t, torch.full((t.shape[0], n), fill, dtype=t.dtype)], dim=1)
            out[key].append(t)
    return {k: torch.cat(v).contiguous() for k, v in out.items() if v}


def _shard_as(world_size: int, rank: int) -> None:
    """Make the trainer's ``accelerator.prepare`` shard its dataloader for rank ``rank`` of ``world_size``."""
    import accelerate.accelerator as accelerator_module  # heavy: accelerate

    original = accelerator_module.prepare_data_loader

    def sharded(data_loader, *args, **kwargs):
        kwargs.update(num_processes=world_size, process_index=rank)
        return original(data_loader, *args, **kwargs)

    accelerator_module.prepare_data_loader = sharded


def rebuild(run_dir: Path, step: int, out: Path, *, world_size: int = 1, rank: int = 0) -> dict:
    """Write the batch of optimizer step ``step`` of the run in ``run_dir`` (rank ``rank`` of ``world_size``)
    to ``out``; returns its metadata."""
    from llamafactory.train.tuner import run_exp  # heavy: llamafactory
    from ruamel.yaml import YAML  # heavy: ruamel
    from safetensors.torch import save_file  # heavy: safetensors
    from transformers import TrainerCallback  # heavy: transformers

    config = YAML(typ="safe").load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    meta: dict = {}
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not one of the run's {world_size} process(es) (0-{world_size - 1})")
    if world_size > 1:
        _shard_as(world_size, rank)

    class Grab(TrainerCallback):
        def on_train_begin(self, args, state, control, train_dataloader=None, processing_class=None, **kw):
            loader = train_dataloader
            if state.max_steps and step > state.max_steps:
                raise ValueError(f"step {step} is past the run's last step ({state.max_steps})")
            epoch, first, count = locate(step, len(loader), args.gradient_accumulation_steps)
            if hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)
            picked = []
            for k, batch in enumerate(loader):
                if k >= first:
                    picked.append({key: v for key, v in batch.items() if hasattr(v, "shape")})
                if len(picked) == count:
                    break
            if len(picked) != count:
                raise ValueError(f"step {step} is past the end of the data ({len(loader)} micro-batches an epoch)")
            tok = processing_class or kw.get("tokenizer")
            pad = getattr(tok, "pad_token_id", None)
            tensors = _concat(picked, pad if isinstance(pad, int) else 0)
            meta.update(format=FORMAT, run=run_dir.name, step=step, epoch=epoch, first_micro_batch=first,
                        micro_batches=[int(b["input_ids"].shape[0]) for b in picked], seed=args.seed,
                        world_size=world_size, rank=rank,
                        accumulation=args.gradient_accumulation_steps, tokens=int(tensors["attention_mask"].sum()))
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.tmp")
            save_file({f"input/{k}": v for k, v in tensors.items()}, str(tmp), metadata={"hipwizard": json.dumps(meta)})
            tmp.replace(out)
            raise _Found()

    with tempfile.TemporaryDirectory(prefix="hipwizard-step-batch-") as scratch:
        args = {**config, "output_dir": scratch, "overwrite_output_dir": True, "report_to": "none",
                "plot_loss": False, "do_train": True, "do_eval": False}
        try:
            run_exp(args=args, callbacks=[Grab()])
        except _Found:
            return meta
    raise RuntimeError("the trainer finished without starting: no batch was taken")


def read_inputs(path: Path) -> dict:
    """The model inputs of a step-batch file (or any capture): ``input_ids`` and ``attention_mask`` as CPU
    tensors. Raises ``UserError`` naming the file when it has no ``input/input_ids``."""

    try:
        from safetensors.torch import load_file  # heavy: safetensors

        tensors = load_file(str(path))
    except (OSError, ValueError, RuntimeError) as exc:
        raise UserError(f"--inputs {path}: not a readable safetensors file ({exc})") from None
    inputs = {k.removeprefix("input/"): v for k, v in tensors.items()
              if k in ("input/input_ids", "input/attention_mask")}
    if "input_ids" not in inputs:
        raise UserError(f"--inputs {path} holds no input/input_ids")
    return inputs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hipwizard.parity.capture.step_batch")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--step", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--rank", type=int, default=0)
    a = p.parse_args(argv)
    try:
        meta = rebuild(a.run_dir, a.step, a.out, world_size=a.world_size, rank=a.rank)
    except (ValueError, OSError) as exc:
        print(f"hipwizard-step-batch: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
