"""Verdicts on exact and broken originals, and each detector with a case that only it catches."""

from __future__ import annotations

import numpy as np

from hipwizard.parity.kernels.inputs import Kind, decode, encode, is_sentinel, sentinel, shapes, values
from hipwizard.parity.kernels.spec import Buffer, KernelSpec
from hipwizard.parity.kernels.verdict import BufferRuns, judge

F32 = Kind("float", 4)


def runs(oracle, original, port, *, original2=None, port2=None, unwritten_port=None, name="out"):
    o = [np.asarray(original, np.float64), np.asarray(original2 if original2 is not None else original, np.float64)]
    p = [np.asarray(port, np.float64), np.asarray(port2 if port2 is not None else port, np.float64)]
    o_raw = [x.astype(np.float32) for x in o]
    p_raw = [x.astype(np.float32) for x in p]
    pu = unwritten_port if unwritten_port is not None else np.zeros(len(o[0]), bool)
    return BufferRuns(name, "float", 4, np.asarray(oracle, np.float64), o, p, np.zeros(len(o[0]), bool),
                      [pu, pu], [x.tobytes() for x in o_raw], [x.tobytes() for x in p_raw])


def test_exact_original_is_no_division_by_zero():
    x = np.linspace(-1, 1, 64)
    assert judge([runs(x, x, x)], {}).status == "pass"
    # a port one ulp-ish away from an exact original passes on the dtype's floor, a real error does not
    near = x * (1 + 2e-7)
    assert judge([runs(x, x, near)], {}).status == "pass"
    far = x * (1 + 1e-3)
    v = judge([runs(x, x, far)], {})
    assert (v.status, v.detector) == ("fail", "triangle")


def test_triangle_scales_with_the_originals_own_error():
    x = np.linspace(1, 2, 64)
    v = judge([runs(x, x * (1 + 5e-5), x * (1 + 9e-5))], {})
    assert v.status == "pass" and v.port_error > v.original_error
    v = judge([runs(x, x * (1 + 5e-5), x * (1 + 5e-4))], {})
    assert v.detector == "triangle"


def test_broken_original_reported_as_such_not_fixed_by_the_port():
    x = np.linspace(-1, 1, 16)
    nan_orig = x.copy()
    nan_orig[3] = np.nan
    v = judge([runs(x, nan_orig, x)], {})  # the port equals the oracle: still the original's fault, named
    assert v.status == "original broken" and "[3]" in v.detail
    v = judge([runs(x, x + 0.5, x)], {})
    assert v.status == "original broken" and v.detector == "far off"


def test_unwritten_detector():
    x = np.linspace(-1, 1, 65)
    port = x.copy()
    lost = np.zeros(65, bool)
    lost[-1] = True
    port[-1] = np.nan  # the sentinel NaN survived: without the detector this reads as non-finite
    v = judge([runs(x, x, port, unwritten_port=lost)], {})
    assert (v.status, v.detector) == ("fail", "unwritten") and "[64]" in v.detail


def test_nonfinite_detector():
    x = np.linspace(-1, 1, 33)
    port = x.copy()
    port[5] = np.inf
    v = judge([runs(x, x, port)], {})
    assert (v.status, v.detector) == ("fail", "non-finite")


def test_nondeterministic_detector_where_the_first_run_is_right():
    x = np.linspace(-1, 1, 33)
    second = x.copy()
    second[7] += 0.25  # only the second run is off: the triangle alone (first run) would pass
    v = judge([runs(x, x, x, port2=second)], {})
    assert (v.status, v.detector) == ("fail", "nondeterministic")
    # the original's own runs differing (atomics) is no port failure
    assert judge([runs(x, x, x, original2=second, port2=second)], {}).status == "pass"


def test_identity_detector_within_the_triangles_tolerance():
    inp = np.linspace(1, 2, 64)
    out = inp * (1 + 1e-8)  # the kernel adds a tiny amount: returning the input is within the floor
    v = judge([runs(out, out, inp)], {"inp": inp})
    assert (v.status, v.detector) == ("fail", "identity")
    assert judge([runs(out, out, out)], {"inp": inp}).status == "pass"


def test_sentinels_and_bf16_round_trip():
    for kind in (Kind("float", 4), Kind("float", 2), Kind("bf16", 2), Kind("float", 8), Kind("int", 4)):
        s = sentinel(5, kind)
        assert is_sentinel(s, kind).all()
        v = values("normal", 5, kind, np.random.default_rng(0))
        assert not is_sentinel(encode(v, kind), kind).any()
    bf = Kind("bf16", 2)
    x = np.array([1.0, -2.5, 3.140625])
    assert np.array_equal(decode(encode(x, bf), bf), x)


def test_shapes_straddle_lanes_and_inputs_are_seeded():
    spec = KernelSpec("k", "k.cu", 1, [], [Buffer("x", "float", "in", "n + 1")], [], {"rows": 4, "n": 4},
                      ["rows", "n"], ["1", "1", "1"], ["256", "1", "1"], "0")
    inner = [d["n"] for d in shapes(spec)]
    assert {31, 32, 33, 63, 64, 65, 127, 128, 129}.issubset(inner) and max(inner) > 4000
    a = values("large", 100, F32, np.random.default_rng([0, 1, 2]))
    b = values("large", 100, F32, np.random.default_rng([0, 1, 2]))
    assert np.array_equal(a, b) and np.abs(a).max() > 1e3
    tiny = values("tiny", 100, F32, np.random.default_rng(1))
    assert np.abs(tiny).max() < 1e-37  # float32 denormals
