"""Compare two captures module by module (numpy only: the comparing machine needs no torch).

Refuses, with one clear sentence, pairs that cannot be compared: different model (config or weights
hash), different inputs, a capture of a model against a capture of a harness. Missing modules and
shape mismatches are rows of the result and make the whole comparison 'invalid'.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from hipwizard.errors import UserError
from hipwizard.parity import metrics
from hipwizard.parity.report import Comparison, LayerResult
from hipwizard.parity.tensorfile import TensorFile, read_meta, read_tensor_file
from hipwizard.parity.tolerances import least_precise, resolve

OUTPUT_PREFIX = "output/"
INPUT_PREFIX = "input/"
SIDE_KEYS = ("kind", "device", "device_name", "dtype", "torch", "hip", "cuda", "seed", "batch", "seq",
             "model", "harness", "attn_implementation", "perturb")


def side_summary(meta: dict, path: Path) -> dict:
    """What the report shows about one side (file name, device, versions, model fingerprint)."""
    out = {k: meta.get(k) for k in SIDE_KEYS if meta.get(k) is not None}
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


def compare_captures(
    ref: TensorFile, cand: TensorFile, *, tolerance: str | None = None,
    overrides: dict[str, float] | None = None, tolerance_file: Path | None = None, jump: float = 4.0,
    metric=metrics.compute,
) -> Comparison:
    """Per-module metrics of ``cand`` against ``ref``. ``tolerance`` names a dtype profile; default:
    the less precise of the two captures' dtypes. ``metric(ref, cand, tol)`` computes one module's
    Metrics: numpy by default; ``metrics_torch.compute`` when ``cand`` holds tensors still on a device."""
    t0 = time.perf_counter()
    ref_meta, cand_meta = read_meta(ref), read_meta(cand)
    check_same_subject(ref_meta, cand_meta)
    check_same_inputs(ref, cand)
    tol = resolve(tolerance or least_precise(ref_meta.get("dtype", "fp32"), cand_meta.get("dtype", "fp32")),
                  overrides, tolerance_file)
    order = [m["name"] for m in sorted(ref_meta.get("modules", []), key=lambda m: m.get("order", 0))]
    # Modules present as tensors but absent from the module list still get compared, after the rest.
    order += sorted(n[len(OUTPUT_PREFIX):] for n in ref.tensors
                    if n.startswith(OUTPUT_PREFIX) and n[len(OUTPUT_PREFIX):] not in order)
    layers: list[LayerResult] = []
    problems: list[str] = []
    pending: list[tuple[int, object, object]] = []  # (row in layers, ref, cand) of the modules to compare
    for i, name in enumerate(order):
        key = OUTPUT_PREFIX + name
        r = ref.tensors.get(key)
        c = cand.tensors.get(key)
        if r is None:
            problems.append(f"module {name} is listed in the reference but its output is not stored")
            layers.append(LayerResult(name, i, [], "missing", detail="not stored in the reference"))
            continue
        if c is None:
            problems.append(f"module {name} is missing from the candidate capture")
            layers.append(LayerResult(name, i, list(r.shape), "missing", detail="not captured on the candidate"))
            continue
        if r.shape != c.shape:
            problems.append(f"module {name}: shape {list(r.shape)} (reference) ≠ {list(c.shape)} (candidate)")
            layers.append(LayerResult(name, i, list(r.shape), "shape",
                                      detail=f"candidate shape {list(c.shape)}"))
            continue
        pending.append((len(layers), r, c))
        layers.append(LayerResult(name, i, list(r.shape), "pass"))  # verdict and metrics filled in below
    # A metric with a batched form (``metric.many``, e.g. on-device torch) computes every module before
    # bringing results to the host at once; otherwise one call per module.
    many = getattr(metric, "many", None)
    results = many([(r, c) for _i, r, c in pending], tol) if many else [metric(r, c, tol) for _i, r, c in pending]
    for (at, _r, _c), m in zip(pending, results):
        layer = layers[at]
        layers[at] = LayerResult(layer.name, layer.order, layer.shape, m.verdict, metrics=m, detail="; ".join(m.reasons))
    extra = sorted(n[len(OUTPUT_PREFIX):] for n in cand.tensors
                   if n.startswith(OUTPUT_PREFIX) and n[len(OUTPUT_PREFIX):] not in order)
    for j, name in enumerate(extra):
        layers.append(LayerResult(name, len(order) + j, list(cand.tensors[OUTPUT_PREFIX + name].shape), "extra",
                                  detail="only in the candidate capture; not compared"))
    compared = [layer for layer in layers if layer.metrics is not None]
    idx = metrics.first_divergent(
        [layer.metrics.rel_l2 for layer in compared], [not layer.passed for layer in compared], jump,
    )
    return Comparison(
        reference=side_summary(ref_meta, ref.path), candidate=side_summary(cand_meta, cand.path),
        tolerance=tol.as_dict(), layers=layers,
        first_divergent=compared[idx].name if idx is not None else None, problems=problems,
        timings={"compare_s": round(time.perf_counter() - t0, 4)},
    )


def compare_files(ref_path: str | Path, cand_path: str | Path, **kwargs) -> Comparison:
    """Read both capture files and compare them (see ``compare_captures``)."""
    return compare_captures(read_tensor_file(ref_path), read_tensor_file(cand_path), **kwargs)
