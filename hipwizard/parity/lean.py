"""A same-machine comparison at the cost of sketches: ``compare --reference cpu --triangle --lean``.

The triangle decides a row by one number, port rel L2 / the reference run's own rel L2, against k; a count
sketch (``capture.sketch``) estimates a rel L2 within ~1% (spread 1/sqrt(8192)). So:

1. the three sides (the float64 CPU reference, the reference in the run dtype, the candidate) are captured with
   every module output and gradient as a sketch (``--compact``'s form), kept in memory: no file is written, the
   candidate is compared where it was computed;
2. a row is settled by its sketch when its triangle ratio is clear of k by more than ``MARGIN`` (20%: ~13
   spreads of the ratio) and it passes: the full tensors would give the same verdict;
3. every other row (it fails, or its ratio is within the margin of k) is *flagged*: its modules are run once
   more on all three sides with every element kept (``layers`` = those modules only, gradients unsketched) and
   the flagged rows are compared on the full tensors: their verdict, max |Δ|, the share outside tolerance and
   the worst elements are the full comparison's.

The deciding verdict of every row is the one the full capture gives (within the margin); so is the fixed
table's cosine and rel L2 verdict (a row near that bar is flagged too). What differs: rows settled by their sketch
show the fixed table's cosine and rel L2 only (as ``--compact`` does), so their fixed verdict does not check the
share of elements outside tolerance (measured on the small bench model in bf16 on the CPU: one row of 70, ``model.norm``, whose
full tensors have 2.1% of elements outside the bf16 tolerance against a 2% bar, with rel L2 0.010 of 0.02). Needs the triangle (without it a pass needs
every element: nothing would be saved).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.parity.capture import sketch, step_batch
from hipwizard.parity.capture.backward import BackwardSpec
from hipwizard.parity.capture.model import capture_model, pick_device
from hipwizard.parity.compare import metrics_torch
from hipwizard.parity.compare.captures import OUTPUT_PREFIX, compare_captures
from hipwizard.parity.compare.result import Comparison, LayerResult
from hipwizard.parity.requests import RunOptions, Subject
from hipwizard.parity.tensorfile import META_KEY, TensorFile
from hipwizard.progress import Progress, ProgressFn, quiet

MARGIN = 0.2  # a sketched ratio within 20% of k is flagged (the rel L2 estimate's spread is ~1.1% per side)


def flagged_rows(comp: Comparison) -> list[LayerResult]:
    """The rows of one direction that their sketch does not settle: sketched rows that fail the triangle or sit
    within ``MARGIN`` of k, and rows whose sketched rel L2 or cosine fails the fixed table's bar or sits within
    the margin of it (so the fixed verdict shown beside the triangle is the full tensors' too); rows without a
    sketch (or without a triangle) are settled as they are."""
    rel_max = float(comp.tolerance.get("rel_l2_max") or 0.0)
    gap_max = 1.0 - float(comp.tolerance.get("cosine_min") or 0.0)
    out = []
    for layer in comp.layers:
        m, tri = layer.metrics, layer.triangle
        if m is None or not m.sketch or tri is None or m.verdict in ("nan", "inf"):
            continue
        near_fixed = (rel_max > 0 and m.rel_l2 * (1 + MARGIN) > rel_max) or (
            gap_max > 0 and (1.0 - m.cosine) * (1 + MARGIN) ** 2 > gap_max)
        if not tri.passed or tri.ratio > tri.k / (1 + MARGIN) or near_fixed:
            out.append(layer)
    return out


def compare_lean(subject: Subject, opts: RunOptions, *, progress: ProgressFn | None = None,
                 **compare_kwargs) -> Comparison:
    """``runs.compare_same_machine`` with the triangle, sketches first and full tensors for the flagged rows
    only (module docstring). ``timings`` adds ``lean_flagged`` (rows), ``lean_modules`` (modules re-run) and
    ``lean_bytes`` (what the sketched sides held: what a file of them would be)."""
    progress = progress or quiet
    if subject.harness is not None:
        raise UserError("--lean works with a model (--model/--demo), not with a harness")
    if not opts.triangle:
        raise UserError("--lean settles rows by the triangle: add --triangle (without it every passing row "
                        "would need its full tensors)")
    opts = replace(opts, dtype=opts.dtype or "fp32", backward=bool(opts.backward))
    model_dir = subject.resolve_model(progress)
    grad_sketch = opts.grad_sketch
    sides = _sides(model_dir, subject, opts, sketch.COUNT_SIZE, grad_sketch, None, progress)
    comp = _compare(sides, opts, compare_kwargs)
    rows = flagged_rows(comp) + (flagged_rows(comp.backward) if comp.backward is not None else [])
    lean_bytes = sum(_nbytes(tf) for tf in sides)
    modules = sorted({layer.module or layer.name for layer in rows})
    if rows:
        progress(Progress(f"full tensors for {len(modules)} flagged module(s)"))
        full = _sides(model_dir, subject, replace(opts, layers=modules), 0, 0, 0, progress)
        keys = _keys(rows, json.loads(sides[0].metadata[META_KEY]))
        sides = tuple(_merge(s, f, keys) for s, f in zip(sides, full, strict=True))  # type: ignore[assignment]
        comp = _compare(sides, opts, compare_kwargs)
    comp.timings.update(lean_flagged=len(rows), lean_modules=len(modules), lean_bytes=lean_bytes)
    return comp


def _keys(rows: list[LayerResult], ref_meta: dict) -> set[str]:
    """The tensor keys of ``rows``: a gradient row by its name in the reference's row list, else an output."""
    grads = {g["name"]: g["key"] for g in (ref_meta.get("backward") or {}).get("grads", [])}
    return {grads.get(layer.name) or OUTPUT_PREFIX + layer.name for layer in rows}


def _sides(model_dir: Path, subject: Subject, opts: RunOptions, compact: int, count_size: int | None,
           rank: int | None, progress: ProgressFn) -> tuple[TensorFile, TensorFile, TensorFile]:
    """(float64 CPU reference, run-dtype CPU reference, candidate) captured in memory, sketched ``compact``."""
    spec = None
    if opts.backward:
        spec = BackwardSpec(loss=opts.loss, loss_seed=opts.seed, weights=opts.grad_weights, count_size=count_size,
                            sketch_rank=rank)
    out = []
    inputs_from = step_batch.read_inputs(Path(opts.inputs)) if opts.inputs else None
    for what, dtype, device in (("reference", "fp64", "cpu"), ("reference run", opts.dtype, "cpu"),
                                ("candidate", opts.dtype, opts.device)):
        progress(Progress(f"{what} ({dtype}, {device})"))
        device = pick_device(device)
        tensors, meta = capture_model(
            model_dir, dtype=dtype or "fp32", device=device, seed=opts.seed, batch=opts.batch, seq=opts.seq,
            layers=opts.layers, inputs_from=inputs_from, perturb=(opts.perturb or None) if what == "candidate" else None,
            attn=opts.attn if what == "candidate" or opts.attn in ("eager", "sdpa") else None, progress=progress,
            on_device=what == "candidate", backward=spec,
            perturb_grad=(opts.perturb_grad or None) if what == "candidate" else None, adapter=subject.adapter,
            compact=compact)
        host = {k: (v.numpy() if k.startswith("input/") else v) for k, v in tensors.items()}
        out.append(TensorFile(Path(f"{what} ({dtype}, {device}, in memory)"), host, {},
                              {META_KEY: json.dumps(meta)}))
    return out[0], out[1], out[2]


def _compare(sides, opts: RunOptions, compare_kwargs: dict) -> Comparison:
    ref, run, cand = sides
    device = json.loads(cand.metadata[META_KEY]).get("device", "cpu")
    return compare_captures(ref, cand, metric=metrics_torch.metric_for(device), backward=opts.backward,
                            ref_run=run, **compare_kwargs)


def _merge(sketched: TensorFile, full: TensorFile, keys: set[str]) -> TensorFile:
    """``sketched`` with the tensors of ``keys`` taken whole from ``full`` and their form dropped from the
    metadata (so they are compared element by element)."""
    meta = json.loads(sketched.metadata[META_KEY])
    tensors = dict(sketched.tensors)
    for key in keys:
        if key in full.tensors:
            tensors[key] = full.tensors[key]
    for row in meta.get("modules", []):
        if OUTPUT_PREFIX + row["name"] in keys and OUTPUT_PREFIX + row["name"] in full.tensors:
            row.pop("form", None)
            row.pop("full_shape", None)
    for row in (meta.get("backward") or {}).get("grads", []):
        if row.get("key") in keys and row["key"] in full.tensors:
            row.pop("form", None)
            row.pop("full_shape", None)
    return TensorFile(sketched.path, tensors, {}, {META_KEY: json.dumps(meta)})


def _nbytes(tf: TensorFile) -> int:
    return sum(int(t.nbytes) for k, t in tf.tensors.items() if not k.startswith("input/"))
