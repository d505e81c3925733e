"""Error metrics between a reference tensor and a candidate tensor (numpy, computed in float64).

``metrics_torch`` computes the same numbers with torch on the device that holds the candidate.

NaN and Inf are counted and reported as such; a tensor holding any is never a pass, whatever the other
numbers say (numpy would otherwise let a NaN silently poison or vanish from a max).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hipwizard.parity.compare.result import ElementError, Metrics
from hipwizard.parity.compare.tolerances import Tolerance

# Histogram of per-element |Δ| by decade: edges 1e-12 ... 1e+2, plus "exactly equal" and ">= 1e2".
HIST_DECADES = tuple(range(-12, 3))
WORST_COUNT = 5
_EDGES = np.array([float(f"1e{d}") for d in HIST_DECADES])  # the decade bounds, as written
_LABELS = [f"<1e{HIST_DECADES[0]}"] + [f"1e{d}" for d in HIST_DECADES[:-1]] + [f"≥1e{HIST_DECADES[-1]}"]


# Elements per block of the single pass: the float64 temporaries of a block (~2 MB each) stay in cache,
# so each tensor is read from memory once instead of once per metric.
BLOCK = 1 << 18


def scores_of(sums) -> tuple[float, float]:
    """(relative L2 error, cosine) from the float64 sums (Σr², Σc², Σd², Σr·c, ...) of one tensor pair."""
    ref_norm, cand_norm, diff_norm = (float(np.sqrt(x)) for x in sums[:3])
    if ref_norm == 0.0:
        # A zero reference: relative error is undefined; only an exact zero matches it.
        return (0.0 if diff_norm == 0.0 else float("inf")), (1.0 if cand_norm == 0.0 else 0.0)
    cosine = 1.0 if cand_norm == 0.0 and diff_norm == 0.0 else (
        float(sums[3] / (ref_norm * cand_norm)) if cand_norm else 0.0)
    return diff_norm / ref_norm, cosine


def compute(ref: np.ndarray, cand: np.ndarray, tol: Tolerance) -> Metrics:
    """Compare ``cand`` to ``ref`` (same shape) under ``tol``. Shapes must already match.

    One pass over the tensors in blocks: each block is widened to float64 (float32 and decoded bf16
    are exact in float64) and feeds float64 sums (Σr², Σc², Σd², Σr·c), the max |Δ|, the count outside
    tolerance, the histogram and the worst-element candidates. Same definitions as the whole-array
    formulas, only the summation order differs (relative differences ~1e-15).
    """
    r = np.asarray(ref).ravel()
    c = np.asarray(cand).ravel()
    n = r.size
    sums = np.zeros(4)  # Σr², Σc², Σd², Σr·c
    max_abs, outside, zero = 0.0, 0, 0
    at_least = np.zeros(len(_EDGES), dtype=np.int64)  # elements with |Δ| >= each decade edge
    k = min(WORST_COUNT, n)
    best_val, best_idx = np.zeros(0), np.zeros(0, dtype=np.int64)  # a superset of the k worst so far
    for start in range(0, n, BLOCK):
        rr = r[start:start + BLOCK].astype(np.float64)
        cc = c[start:start + BLOCK].astype(np.float64)
        d = cc - rr
        absd = np.abs(d)
        block_max = absd.max()
        if not np.isfinite(block_max) or not np.isfinite(rr).all() or not np.isfinite(cc).all():
            return _compute_nonfinite(ref, cand, tol)  # rare: NaN/Inf counted and reported as such
        # einsum, not `@`: a BLAS dot may start threads, and on a loaded box their spinning cost up to 1000x
        sums += (_dot(rr, rr), _dot(cc, cc), _dot(d, d), _dot(rr, cc))
        max_abs = max(max_abs, float(block_max))
        bound = np.abs(rr)
        bound *= tol.rtol
        bound += tol.atol
        outside += int(np.count_nonzero(absd > bound))
        zero += int(np.count_nonzero(absd == 0))
        # one compare per decade edge up to the block's max (cheaper than searchsorted on every element)
        for j in range(int(np.searchsorted(_EDGES, block_max, side="right"))):
            at_least[j] += np.count_nonzero(absd >= _EDGES[j])
        best_val, best_idx = _keep_worst(absd, start, k, best_val, best_idx)
    rel_l2, cosine = scores_of(sums)
    outside_share = outside / n if n else 0.0
    # bin i counts 1e(lo+i-1) <= |Δ| < 1e(lo+i): differences of the "at least" counts; zeros out of bin 0
    counts = -np.diff(np.concatenate(([n], at_least, [0])))
    counts[0] -= zero
    histogram = [] if n == 0 else [("0", zero)] + [(label, int(x)) for label, x in zip(_LABELS, counts, strict=True)]
    worst = _worst(ref, cand, best_val, best_idx) if n else []
    return verdict_of(tol, cosine, max_abs, rel_l2, outside_share, histogram, worst)


def verdict_of(tol: Tolerance, cosine: float, max_abs: float, rel_l2: float, outside_share: float,
               histogram: list[tuple[str, int]], worst: list[ElementError]) -> Metrics:
    """The finite case's Metrics: reasons (and so the verdict) from the numbers and ``tol``.

    Shared by the numpy and the torch paths so that their verdicts cannot drift apart.
    """
    reasons = []
    if cosine < tol.cosine_min:
        reasons.append(f"cosine {cosine:.6f} < {tol.cosine_min:g}")
    if rel_l2 > tol.rel_l2_max:
        reasons.append(f"rel L2 {rel_l2:.3g} > {tol.rel_l2_max:g}")
    if outside_share > tol.outside_max:
        reasons.append(f"{outside_share:.2%} of elements outside tolerance > {tol.outside_max:.2%}")
    return Metrics(
        cosine=cosine, max_abs=max_abs, rel_l2=rel_l2, outside_share=outside_share, nan_count=0, inf_count=0,
        verdict="fail" if reasons else "pass", reasons=reasons, histogram=histogram, worst=worst,
    )


def of_sketch(m: Metrics, tol: Tolerance, form: str) -> Metrics:
    """``m``, computed on two sketches of a row (``form``), as that row's metrics: the cosine and rel L2
    estimate the full tensors' and decide; the per-element numbers (max |Δ|, share outside tolerance,
    histogram, worst elements) would describe sketch entries, so they are dropped. NaN/Inf stay verdicts
    (a NaN element reaches its bucket), their counts being of sketch entries."""
    if m.verdict in ("nan", "inf"):
        return replace(m, max_abs=None, outside_share=None, histogram=[], worst=[], sketch=form)
    reasons = [r for r in verdict_of(tol, m.cosine, 0.0, m.rel_l2, 0.0, [], []).reasons]
    return replace(m, max_abs=None, outside_share=None, histogram=[], worst=[], sketch=form, reasons=reasons,
                   verdict="fail" if reasons else "pass")


def _compute_nonfinite(ref: np.ndarray, cand: np.ndarray, tol: Tolerance) -> Metrics:
    """Whole-array float64 path for tensors holding NaN/Inf (or whose difference overflows)."""
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
    # finite inputs whose difference overflowed float64: the whole-array formulas, as before
    diff = c - r
    absd = np.abs(diff)
    ref_norm, cand_norm, diff_norm = (float(np.linalg.norm(x)) for x in (r, c, diff))
    if ref_norm == 0.0:
        rel_l2 = 0.0 if diff_norm == 0.0 else float("inf")
        cosine = 1.0 if cand_norm == 0.0 else 0.0
    else:
        rel_l2 = diff_norm / ref_norm
        cosine = 1.0 if cand_norm == 0.0 and diff_norm == 0.0 else (
            float(np.dot(r, c) / (ref_norm * cand_norm)) if cand_norm else 0.0)
    outside_share = float((absd > (tol.atol + tol.rtol * np.abs(r))).mean()) if r.size else 0.0
    top = _block_top(absd, WORST_COUNT)
    return verdict_of(tol, cosine, float(absd.max()) if absd.size else 0.0, rel_l2, outside_share,
                      _histogram(absd), _worst(ref, cand, absd[top], top))


def _histogram(absd: np.ndarray) -> list[tuple[str, int]]:
    """Counts of |Δ| per decade, labelled; decades with no element are kept so bars line up."""
    if absd.size == 0:
        return []
    zero = int(np.count_nonzero(absd == 0))
    counts = np.bincount(np.searchsorted(_EDGES, absd, side="right"), minlength=len(_LABELS))
    counts[0] -= zero
    return [("0", zero)] + [(label, int(n)) for label, n in zip(_LABELS, counts, strict=True)]


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.einsum("i,i->", a, b))


def _keep_worst(absd: np.ndarray, start: int, k: int, best_val: np.ndarray, best_idx: np.ndarray):
    """Merge a block (flat offset ``start``) into the k worst |Δ| so far, ties by position (lowest first).

    Blocks come in position order, so a later element only enters by being strictly larger than the k-th
    worst so far: one compare finds those; the partition runs only for the first block or when many do.
    """
    if k == 0:
        return best_val, best_idx
    if best_val.size >= k:
        pick = np.flatnonzero(absd > best_val.min())
        if pick.size > 64 * k:
            pick = _block_top(absd, k)
    else:
        pick = _block_top(absd, k)
    if pick.size == 0:
        return best_val, best_idx
    vals, idx = np.concatenate((best_val, absd[pick])), np.concatenate((best_idx, pick + start))
    order = np.lexsort((idx, -vals))[:k]
    return vals[order], idx[order]


def _block_top(absd: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest |Δ| of a block, ties broken by position (lowest first): deterministic,
    so the numpy and torch paths report the same worst elements."""
    if k == 0 or absd.size == 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, absd.size)
    kth = np.partition(absd, absd.size - k)[absd.size - k]
    above = np.flatnonzero(absd > kth)
    return np.concatenate((above, np.flatnonzero(absd == kth)[: k - above.size]))


def _worst(ref: np.ndarray, cand: np.ndarray, values: np.ndarray, flat_index: np.ndarray) -> list[ElementError]:
    """The WORST_COUNT largest |Δ| among candidate ``values`` at flat positions ``flat_index``, largest first."""
    if values.size == 0:
        return []
    pick = np.lexsort((flat_index, -values))[:WORST_COUNT]  # largest first; ties by position
    rr, cc = np.asarray(ref).ravel(), np.asarray(cand).ravel()
    return [
        ElementError(tuple(int(i) for i in np.unravel_index(int(flat_index[j]), np.shape(ref))),
                     float(rr[flat_index[j]]), float(cc[flat_index[j]]), float(values[j]))
        for j in pick
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
    for i, (err, bad) in enumerate(zip(rel_errors, failed, strict=True)):
        finite = err == err and err != float("inf")
        if bad and (not finite or running == 0.0 or err >= jump * running):
            return i
        if finite:
            running = max(running, err)
    return failed.index(True)
