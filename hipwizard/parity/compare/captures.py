"""Compare two captures module by module (numpy only: the comparing machine needs no torch).

Refuses, with one clear sentence, pairs that cannot be compared: different model (config or weights
hash), different inputs, a capture of a model against a capture of a harness. Missing modules and
shape mismatches are rows of the result and make the whole comparison 'invalid'.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hipwizard.errors import UserError
from hipwizard.parity.compare import metrics
from hipwizard.parity.compare.result import Comparison, LayerResult, Triangle
from hipwizard.parity.compare.tolerances import canonical_dtype, least_precise, more_precise, resolve
from hipwizard.parity.tensorfile import TensorFile, read_meta, read_tensor_file

OUTPUT_PREFIX = "output/"
INPUT_PREFIX = "input/"
GRAD_PREFIX = "grad/"
SIDE_KEYS = ("kind", "device", "device_name", "dtype", "torch", "hip", "cuda", "seed", "batch", "seq",
             "model", "harness", "attn_implementation", "attn", "perturb", "backward")
# The triangle's default k: a port passes when its error against the high-precision reference is at most
# this many times the reference machine's own run-dtype error (docs/parity.md: measured ratios of correct
# ports stay below ~1.3; a 5% wrong backward or forward lands at 3x and far above).
DEFAULT_K = 2.0


def side_summary(meta: dict, path: Path) -> dict:
    """What the report shows about one side (file name, device, versions, model fingerprint)."""
    out = {k: meta.get(k) for k in SIDE_KEYS if meta.get(k) is not None}
    if isinstance(bw := out.get("backward"), dict):  # the row list is the table itself: keep the loss, not the rows
        out["backward"] = {k: v for k, v in bw.items() if k != "grads"}
    out["file"] = Path(path).name
    return out


def check_same_subject(ref_meta: dict, cand_meta: dict) -> None:
    """Refuse two captures of different models (or of a model and a harness)."""
    if ref_meta.get("kind") != cand_meta.get("kind"):
        raise UserError(
            f"cannot compare a {ref_meta.get('kind')} capture with a {cand_meta.get('kind')} capture"
        )
    if ref_meta.get("kind") != "model":
        return
    ref_model, cand_model = ref_meta.get("model", {}), cand_meta.get("model", {})
    a, b = (m.get("adapter") or {} for m in (ref_model, cand_model))
    if bool(a) != bool(b) or a.get("weights_hash") != b.get("weights_hash"):
        raise UserError(f"the captures come from different adapters: {a.get('name') or 'none'} (reference) ≠ "
                        f"{b.get('name') or 'none'} (candidate); both sides need the very same adapter (--adapter DIR)")
    for key, what in (("config_hash", "config"), ("weights_hash", "weights")):
        a, b = ref_model.get(key), cand_model.get(key)
        if a and b and a != b:
            raise UserError(
                f"the captures come from different models: {what} hash {a} (reference) ≠ {b} (candidate); "
                "both sides need the very same model folder"
            )


def check_same_inputs(ref: TensorFile, cand: TensorFile) -> None:
    """Integer inputs (token ids, masks, indices) must be identical; float inputs must share shapes."""
    for name, arr in ref.tensors.items():
        if not name.startswith(INPUT_PREFIX):
            continue
        other = cand.tensors.get(name)
        if other is None:
            raise UserError(f"the candidate capture lacks input {name[len(INPUT_PREFIX):]!r}: it was run on other inputs")
        if arr.shape != other.shape:
            raise UserError(
                f"input {name[len(INPUT_PREFIX):]!r} has shape {list(arr.shape)} in the reference and "
                f"{list(other.shape)} in the candidate: rerun with the reference's inputs (`parity compare REF --model DIR`)"
            )
        if arr.dtype.kind in "iub" and not np.array_equal(arr, other):
            raise UserError(
                f"input {name[len(INPUT_PREFIX):]!r} differs between the captures (another seed?): "
                "rerun with the reference's inputs (`parity compare REF --model DIR`)"
            )


def check_same_backward(ref_meta: dict, cand_meta: dict, what: str = "candidate") -> None:
    """Refuse gradients of different losses (kind, seed) or different weight selections."""
    a, b = ref_meta.get("backward") or {}, cand_meta.get("backward") or {}
    selection: dict[Any, Any] = {"lora-full": "lora"}  # the same parameters, stored whole: the form check below tells them apart
    for key, label in (("loss", "loss"), ("loss_seed", "loss seed"), ("weights", "--grad-weights")):
        if selection.get(a.get(key), a.get(key)) != selection.get(b.get(key), b.get(key)):
            raise UserError(f"the captures' gradients differ in {label}: {a.get(key)} (reference) ≠ "
                            f"{b.get(key)} ({what}); capture both with the same --loss/--grad-weights")
    form_a, form_b = _weight_form(a), _weight_form(b)  # captures before the sketch hold full ∂W
    if form_a != form_b:
        raise UserError(f"the captures' weight gradients differ in form: {form_a} (reference) ≠ {form_b} ({what}); "
                        "capture both with the same --grad-weights (lora: sketch, lora-full/all: full)")
    size_a, size_b = (int(x.get("count_size") or 0) for x in (a, b))  # before the count sketch: every element
    if size_a != size_b:
        raise UserError(f"the captures' ∂out/∂in differ in form: {_count_form(size_a)} (reference) ≠ "
                        f"{_count_form(size_b)} ({what}); capture both with the same --grad-sketch")


def check_same_output_form(ref_meta: dict, cand_meta: dict, what: str = "candidate") -> None:
    """Refuse module outputs stored in different forms (count sketches of a size, or every element)."""
    a, b = output_sketch(ref_meta), output_sketch(cand_meta)
    if a != b:
        raise UserError(f"the captures' module outputs differ in form: {_count_form(a)} (reference) ≠ "
                        f"{_count_form(b)} ({what}); capture both with (or both without) --compact")


def output_sketch(meta: dict) -> int:
    """The count-sketch size of a capture's module outputs (``--compact``); 0: every element (older captures too)."""
    return int(meta.get("output_sketch") or 0)


def _count_form(size: int) -> str:
    return f"count sketches of {size} values" if size else "every element"


def _weight_form(backward: dict) -> str:
    rank = int(backward.get("sketch_rank") or 0)
    return f"rank-{rank} sketch" if rank else "full"


def wants_backward(ref_meta: dict, cand_meta: dict, backward: bool | None, cand_name: str = "candidate") -> bool:
    """Whether to compare gradients: ``backward`` True demands them on both sides (one clear line naming the
    side that lacks them), False skips them, None compares them when both captures hold them."""
    have_ref, have_cand = bool(ref_meta.get("backward")), bool(cand_meta.get("backward"))
    if backward:
        for have, side in ((have_ref, "reference"), (have_cand, cand_name)):
            if not have:
                raise UserError(f"--backward asked for, but the {side} capture holds no gradients (captured "
                                "without --backward): capture it again with --backward")
    use = have_ref and have_cand if backward is None else bool(backward)
    if use:
        check_same_backward(ref_meta, cand_meta, cand_name)
    return use


def forward_rows(ref: TensorFile, ref_meta: dict) -> list[tuple[str, str, str]]:
    """(row name, tensor key, module) of the module outputs, in execution order; stored outputs missing from
    the module list come after the rest."""
    order = [m["name"] for m in sorted(ref_meta.get("modules", []), key=lambda m: m.get("order", 0))]
    order += sorted(n[len(OUTPUT_PREFIX):] for n in ref.tensors
                    if n.startswith(OUTPUT_PREFIX) and n[len(OUTPUT_PREFIX):] not in order)
    return [(name, OUTPUT_PREFIX + name, "") for name in order]


def backward_rows(ref_meta: dict) -> list[tuple[str, str, str]]:
    """(row name, tensor key, module) of the gradients, in backward order (see ``backward``)."""
    grads = sorted((ref_meta.get("backward") or {}).get("grads", []), key=lambda g: g.get("order", 0))
    return [(g["name"], g["key"], g.get("module", "")) for g in grads]


def compare_captures(
    ref: TensorFile, cand: TensorFile, *, tolerance: str | None = None,
    overrides: dict[str, float] | None = None, tolerance_file: Path | None = None, jump: float = 4.0,
    metric=metrics.compute, backward: bool | None = None, ref_run: TensorFile | None = None,
    k: float | None = None,
) -> Comparison:
    """Per-module metrics of ``cand`` against ``ref``, forward and (``backward``, see ``wants_backward``)
    for the gradients. ``tolerance`` names a dtype profile; default: the less precise of the two captures'
    dtypes. ``metric(ref, cand, tol)`` computes one module's Metrics: numpy by default;
    ``metrics_torch.compute`` when ``cand`` holds tensors still on a device. ``ref_run``, the reference
    machine's capture in the run dtype (``ref`` then being its high-precision capture), adds the triangle
    verdict of each row: pass when the error against ``ref`` is at most ``k`` (default ``DEFAULT_K``) times
    ``ref_run``'s own error against ``ref``; that verdict then decides."""
    t0 = time.perf_counter()
    ref_meta, cand_meta = read_meta(ref), read_meta(cand)
    check_same_subject(ref_meta, cand_meta)
    check_same_inputs(ref, cand)
    check_same_output_form(ref_meta, cand_meta)
    use_backward = wants_backward(ref_meta, cand_meta, backward)
    run_meta = check_triangle(ref, ref_meta, ref_run, cand_meta, use_backward) if ref_run is not None else None
    k = (DEFAULT_K if k is None else float(k)) if ref_run is not None else None
    if k is not None and not k > 0:
        raise UserError(f"--k must be a positive number, not {k:g}")
    tol = resolve(tolerance or least_precise(ref_meta.get("dtype", "fp32"), cand_meta.get("dtype", "fp32")),
                  overrides, tolerance_file)
    sides = {"reference": side_summary(ref_meta, ref.path), "candidate": side_summary(cand_meta, cand.path),
             "tolerance": tol.as_dict(), "triangle_k": k,
             "reference_run": side_summary(run_meta, ref_run.path) if ref_run is not None and run_meta is not None
             else None}
    out_forms = {OUTPUT_PREFIX + m["name"]: m for m in ref_meta.get("modules", []) if m.get("form")}
    comp = _compare_rows(forward_rows(ref, ref_meta), OUTPUT_PREFIX, ref, cand, tol, metric, jump, ref_run, k, sides,
                         forms=out_forms)
    if use_backward:
        forms = {g["key"]: g for g in (ref_meta.get("backward") or {}).get("grads", []) if g.get("form")}
        comp.backward = _compare_rows(backward_rows(ref_meta), GRAD_PREFIX, ref, cand, tol, metric, jump, ref_run, k,
                                      sides, direction="backward", forms=forms)
    comp.timings["compare_s"] = round(time.perf_counter() - t0, 4)
    return comp


def check_triangle(ref: TensorFile, ref_meta: dict, ref_run: TensorFile, cand_meta: dict, backward: bool) -> dict:
    """The reference run-dtype capture must be of the same model and inputs as ``ref``, less precise than
    it, in the candidate's dtype, and hold gradients when they are compared. Returns its metadata."""
    run_meta = read_meta(ref_run)
    check_same_subject(ref_meta, run_meta)
    check_same_inputs(ref, ref_run)
    check_same_output_form(ref_meta, run_meta, "reference run-dtype")
    hi, run = canonical_dtype(ref_meta.get("dtype", "fp32")), canonical_dtype(run_meta.get("dtype", "fp32"))
    if more_precise(hi, run) != hi or hi == run:
        raise UserError(f"the triangle needs the reference in higher precision than its run-dtype capture: "
                        f"{ref.path.name} is {hi}, {ref_run.path.name} is {run}")
    cand = canonical_dtype(cand_meta.get("dtype", "fp32"))
    if cand != run:
        raise UserError(f"the reference's run-dtype capture is {run} but the candidate is {cand}: "
                        "the triangle compares the same dtype on both machines")
    if backward:
        wants_backward(ref_meta, run_meta, True, cand_name="reference run-dtype")
    return run_meta


def _compare_rows(rows, prefix: str, ref: TensorFile, cand: TensorFile, tol, metric, jump: float,
                  ref_run: TensorFile | None, k: float | None, sides: dict, direction: str = "forward",
                  forms: dict[str, dict] | None = None) -> Comparison:
    layers: list[LayerResult] = []
    problems: list[str] = []
    pending: list[tuple[int, object, object]] = []  # (row in layers, ref, cand) of the rows to compare
    for i, (name, key, module) in enumerate(rows):
        r = ref.tensors.get(key)
        c = cand.tensors.get(key)
        if r is None:
            problems.append(f"{name} is listed in the reference but not stored")
            layers.append(LayerResult(name, i, [], "missing", detail="not stored in the reference", module=module))
            continue
        if c is None:
            problems.append(f"{name} is missing from the candidate capture")
            layers.append(LayerResult(name, i, list(r.shape), "missing", detail="not captured on the candidate",
                                      module=module))
            continue
        if r.shape != c.shape:
            problems.append(f"{name}: shape {list(r.shape)} (reference) ≠ {list(c.shape)} (candidate)")
            layers.append(LayerResult(name, i, list(r.shape), "shape", detail=f"candidate shape {list(c.shape)}",
                                      module=module))
            continue
        pending.append((len(layers), r, c))
        layers.append(LayerResult(name, i, list(r.shape), "pass", module=module))  # filled in below
    results = _measure(metric, [(r, c) for _i, r, c in pending], tol)
    own_errors = _own_errors(pending, layers, rows, ref_run, tol, metric, problems) if ref_run is not None else {}
    for (at, _r, _c), m in zip(pending, results, strict=True):
        layer = layers[at]
        stored = (forms or {}).get(rows[layer.order][1])  # a sketched row: its form and the tensor's own shape
        m = metrics.of_sketch(m, tol, stored["form"]) if stored else m
        shape = list(stored.get("full_shape") or layer.shape) if stored else layer.shape
        triangle = Triangle(m.rel_l2, own_errors[at], k) if at in own_errors and k is not None else None
        layers[at] = LayerResult(layer.name, layer.order, shape, m.verdict, metrics=m,
                                 detail="; ".join(m.reasons), module=layer.module, triangle=triangle)
    known = {key for _n, key, _m in rows}
    extra = sorted(n for n in cand.tensors if n.startswith(prefix) and n not in known)
    for j, key in enumerate(extra):
        layers.append(LayerResult(key[len(prefix):], len(rows) + j, list(cand.tensors[key].shape), "extra",
                                  detail="only in the candidate capture; not compared"))
    compared = [(layer, layer.metrics) for layer in layers if layer.metrics is not None]
    idx = metrics.first_divergent(
        [m.rel_l2 for _layer, m in compared], [not layer.deciding_pass for layer, _m in compared], jump,
    )
    return Comparison(
        reference=sides["reference"], candidate=sides["candidate"], tolerance=sides["tolerance"], layers=layers,
        first_divergent=compared[idx][0].name if idx is not None else None, problems=problems,
        direction=direction, triangle_k=sides["triangle_k"], reference_run=sides["reference_run"],
    )


def _own_errors(pending, layers, rows, ref_run: TensorFile, tol, metric, problems: list[str]) -> dict[int, float]:
    """The reference machine's own run-dtype error (rel L2 of ``ref_run`` against the high-precision
    reference) of each compared row, by its place in ``layers``; computed with ``metric`` as the rows are
    (batched when it can be), so a device compare keeps both captures on the device."""
    at_own = []
    for at, r, _c in pending:
        own = ref_run.tensors.get(rows[layers[at].order][1])
        if own is None or tuple(own.shape) != tuple(r.shape):
            problems.append(f"{layers[at].name} is missing from the reference's run-dtype capture (or its shape differs)")
        else:
            at_own.append((at, r, own))
    found = _measure(metric, [(r, own) for _at, r, own in at_own], tol)
    return {at: m.rel_l2 for (at, _r, _own), m in zip(at_own, found, strict=True)}


def _measure(metric, pairs: list[tuple], tol) -> list:
    """``metric`` over (ref, cand) pairs: batched (``metric.many``: one device->host transfer) when it can be."""
    many = getattr(metric, "many", None)
    return many(pairs, tol) if many else [metric(r, c, tol) for r, c in pairs]


def compare_files(ref_path: str | Path, cand_path: str | Path, *, ref_run: str | Path | None = None,
                  **kwargs) -> Comparison:
    """Read both capture files (and the reference run-dtype capture) and compare them (``compare_captures``)."""
    run = read_tensor_file(ref_run) if ref_run is not None else None
    return compare_captures(read_tensor_file(ref_path), read_tensor_file(cand_path), ref_run=run, **kwargs)
