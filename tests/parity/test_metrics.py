from __future__ import annotations

import math

import numpy as np

from hipwizard.parity.compare.metrics import compute, first_divergent
from hipwizard.parity.compare.tolerances import resolve


def test_identical_tensors_pass_with_zero_error():
    x = np.random.default_rng(0).standard_normal((4, 8))
    m = compute(x, x.copy(), resolve("fp32"))
    assert m.verdict == "pass"
    assert m.max_abs == 0.0 and m.rel_l2 == 0.0 and math.isclose(m.cosine, 1.0)
    assert m.histogram[0] == ("0", 32)


def test_metrics_match_hand_computation():
    ref = np.array([3.0, 4.0])
    cand = np.array([3.0, 4.5])
    m = compute(ref, cand, resolve("bf16"))
    assert math.isclose(m.max_abs, 0.5)
    assert math.isclose(m.rel_l2, 0.5 / 5.0)
    assert math.isclose(m.cosine, (9 + 18) / (5 * math.hypot(3, 4.5)))
    assert m.verdict == "fail" and any("rel L2" in r for r in m.reasons)
    assert m.worst[0].index == (1,) and m.worst[0].cand == 4.5


def test_outside_share_counts_elements_beyond_atol_plus_rtol():
    ref = np.ones(100)
    cand = ref.copy()
    cand[:3] += 1.0  # 3% of elements far off
    m = compute(ref, cand, resolve("fp32"))
    assert math.isclose(m.outside_share, 0.03)


def test_nan_and_inf_are_reported_never_pass():
    ref = np.ones(10, dtype=np.float32)
    cand = ref.copy()
    cand[2] = np.nan
    m = compute(ref, cand, resolve("bf16", {"rel_l2_max": 1e9, "cosine_min": -1}))
    assert m.verdict == "nan" and m.nan_count == 1 and "1 NaN value(s)" in m.reasons
    cand[2] = np.inf
    m = compute(ref, cand, resolve("bf16"))
    assert m.verdict == "inf" and m.inf_count == 1


def test_zero_reference_only_matches_zero():
    z = np.zeros(5)
    assert compute(z, z, resolve("fp32")).verdict == "pass"
    assert compute(z, z + 1e-3, resolve("fp32")).verdict == "fail"


def test_first_divergent_is_where_error_jumps_not_where_largest():
    # layer 2 jumps 100x; later layers grow further (largest at the end) but only drift.
    errs = [1e-4, 2e-4, 2e-2, 3e-2, 5e-2]
    failed = [e > 1e-2 for e in errs]
    assert first_divergent(errs, failed) == 2
    assert max(range(len(errs)), key=errs.__getitem__) == 4


def test_first_divergent_slow_drift_falls_back_to_first_failure_and_none_when_all_pass():
    errs = [1e-3, 1.5e-3, 2.2e-3, 3e-3]
    assert first_divergent(errs, [False, False, True, True]) == 2
    assert first_divergent(errs, [False] * 4) is None
    assert first_divergent([1e-3, float("nan")], [False, True]) == 1
