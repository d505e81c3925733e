"""Error metrics between a reference tensor and a candidate tensor (numpy, computed in float64).

NaN and Inf are counted and reported as such; a tensor holding any is never a pass, whatever the other
numbers say (numpy would otherwise let a NaN silently poison or vanish from a max).
"""

from __future__ import annotations

import numpy as np

from hipwizard.parity.report import ElementError, Metrics
from hipwizard.parity.tolerances import Tolerance

# Histogram of per-element |Δ| by decade: edges 1e-12 ... 1e+2, plus "exactly equal" and ">= 1e2".
HIST_DECADES = tuple(range(-12, 3))
WORST_COUNT = 5


def compute(ref: np.ndarray, cand: np.ndarray, tol: Tolerance) -> Metrics:
    """Compare ``cand`` to ``ref`` (same shape) under ``tol``. Shapes must already match."""
    r = np.asarray(ref, dtype=np.float64).ravel()
    c = np.asarray(cand, dtype=np.float64).ravel()
    nan_count = int(np.isnan(c).sum() + np.isnan(r).sum())
    inf_count = int(np.isinf(c).sum() + np.isinf(r).sum())
    if nan_count or inf_count:
        which = "nan" if nan_count else "inf"
        reasons = []
        if nan_count:
            reasons.append(f"{nan_count} NaN value(s)")
        if inf_count:
            reasons.append(f"{inf_count} Inf value(s)")
        finite = np.isfinite(r) & np.isfinite(c)
        diff = np.abs(c[finite] - r[finite])
        return Metrics(
            cosine=float("nan"), max_abs=float(diff.max()) if diff.size else float("nan"),
            rel_l2=float("nan"), outside_share=1.0 - float(finite.mean()) if r.size else 0.0,
            nan_count=nan_count, inf_count=inf_count, verdict=which, reasons=reasons,
            histogram=_histogram(diff), worst=[],
        )
    diff = c - r
    absd = np.abs(diff)
    ref_norm = float(np.linalg.norm(r))
    cand_norm = float(np.linalg.norm(c))
    diff_norm = float(np.linalg.norm(diff))
    if ref_norm == 0.0:
        # A zero reference: relative error is undefined; only an exact zero matches it.
        rel_l2 = 0.0 if diff_norm == 0.0 else float("inf")
        cosine = 1.0 if cand_norm == 0.0 else 0.0
    else:
        rel_l2 = diff_norm / ref_norm
        cosine = 1.0 if cand_norm == 0.0 and diff_norm == 0.0 else (
            float(np.dot(r, c) / (ref_norm * cand_norm)) if cand_norm else 0.0)
    outside = absd > (tol.atol + tol.rtol * np.abs(r))
    outside_share = float(outside.mean()) if r.size else 0.0
    reasons = []
    if cosine < tol.cosine_min:
        reasons.append(f"cosine {cosine:.6f} < {tol.cosine_min:g}")
    if rel_l2 > tol.rel_l2_max:
        reasons.append(f"rel L2 {rel_l2:.3g} > {tol.rel_l2_max:g}")
    if outside_share > tol.outside_max:
        reasons.append(f"{outside_share:.2%} of elements outside tolerance > {tol.outside_max:.2%}")
    return Metrics(
        cosine=cosine, max_abs=float(absd.max()) if absd.size else 0.0, rel_l2=rel_l2,
        outside_share=outside_share, nan_count=0, inf_count=0, verdict="fail" if reasons else "pass",
        reasons=reasons, histogram=_histogram(absd), worst=_worst(ref, cand, absd),
    )


def _histogram(absd: np.ndarray) -> list[tuple[str, int]]:
    """Counts of |Δ| per decade, labelled; decades with no element are kept so bars line up."""
    if absd.size == 0:
        return []
    lo, hi = HIST_DECADES[0], HIST_DECADES[-1]
    zero = int((absd == 0).sum())
    with np.errstate(divide="ignore"):
        decades = np.floor(np.log10(absd[absd > 0]))
    # one pass: bin 0 = below 1e{lo}, bins 1.. = 1e{lo} .. 1e{hi-1}, last = at or above 1e{hi}
    bins = np.clip(decades - lo + 1, 0, hi - lo + 1).astype(np.int64)
    counts = np.bincount(bins, minlength=hi - lo + 2)
    labels = [f"<1e{lo}"] + [f"1e{d}" for d in HIST_DECADES[:-1]] + [f"≥1e{hi}"]
    return [("0", zero)] + [(label, int(n)) for label, n in zip(labels, counts)]


def _worst(ref: np.ndarray, cand: np.ndarray, absd: np.ndarray) -> list[ElementError]:
    if absd.size == 0:
        return []
    k = min(WORST_COUNT, absd.size)
    flat = np.argpartition(-absd, k - 1)[:k]
    flat = flat[np.argsort(-absd[flat], kind="stable")]
    rr, cc = np.asarray(ref).ravel(), np.asarray(cand).ravel()
    return [
        ElementError(tuple(int(i) for i in np.unravel_index(int(j), np.shape(ref))), float(rr[j]), float(cc[j]),
                     float(absd[j]))
        for j in flat
    ]


def first_divergent(rel_errors: list[float], failed: list[bool], jump: float = 4.0) -> int | None:
    """Index (in execution order) of the module where divergence starts, or None when all pass.

    Errors grow with depth even when every kernel is right, so the module with the largest error is
    usually just the last one. Divergence starts at the first failing module whose error jumps at least
    ``jump`` times above every earlier module's error (non-finite counts as a jump); when no failing
    module jumps (a slow drift), it is the first failing module.
    """
    if not any(failed):
        return None
    running = 0.0
    for i, (err, bad) in enumerate(zip(rel_errors, failed)):
        finite = err == err and err != float("inf")
        if bad and (not finite or running == 0.0 or err >= jump * running):
            return i
        if finite:
            running = max(running, err)
    return failed.index(True)
