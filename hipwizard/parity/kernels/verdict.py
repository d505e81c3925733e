"""Verdicts of one case: the original against the float64 oracle first, then the port, with four detectors.

- *original broken*: the original is non-finite where the oracle is finite, or further than ``BROKEN`` (relative
  to the oracle's scale) from it; the port is not judged on that case (never silently "fixed" by the port).
- *unwritten*: the sentinel survives in the port where the original wrote.
- *non-finite*: the port is NaN or Inf where the original and the oracle are finite.
- *nondeterministic*: the port's two runs differ where the original's two runs agree.
- *identity*: the port's output equals one of the inputs where the original's does not.
- *triangle*: the port's error to the oracle is at most ``k`` times the original's own error, with an absolute
  floor of ``FLOOR_ULPS`` units of the dtype's epsilon (an exact original is no division by zero).
Errors are max |x - oracle| / max |oracle| over the elements the original wrote and the oracle has finite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FLOOR_ULPS = 16
BROKEN = {2: 5e-2, 4: 1e-3, 8: 1e-9}
_EPS = {"bf16": 2.0 ** -8, 2: 2.0 ** -11, 4: 2.0 ** -24, 8: 2.0 ** -53}


@dataclass
class BufferRuns:
    """One written buffer of one case: lanes as float64, the sentinel masks, the raw bits of each run."""

    name: str
    family: str  # "float", "bf16" or "int"
    size: int
    oracle: np.ndarray
    original: list[np.ndarray]  # per run
    port: list[np.ndarray]
    original_unwritten: np.ndarray
    port_unwritten: list[np.ndarray]
    original_bits: list[bytes] = field(default_factory=list)
    port_bits: list[bytes] = field(default_factory=list)


@dataclass
class CaseVerdict:
    status: str  # "pass", "fail", "original broken", "original crashed", "port crashed", "oracle missing"
    detector: str = ""  # for a failure: unwritten, non-finite, nondeterministic, identity, triangle
    buffer: str = ""
    detail: str = ""
    original_error: float = 0.0
    port_error: float = 0.0
    worst: list[tuple[int, float, float, float]] = field(default_factory=list)  # (index, oracle, original, port)


def eps(family: str, size: int) -> float:
    return _EPS["bf16"] if family == "bf16" else _EPS.get(size, 2.0 ** -24)


def _error(x: np.ndarray, ref: np.ndarray, mask: np.ndarray) -> float:
    if not mask.any():
        return 0.0
    scale = float(np.max(np.abs(ref[mask]))) or 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(x[mask] - ref[mask])
    if not np.all(np.isfinite(diff)):
        return float("inf")
    return float(np.max(diff)) / scale


def judge(buffers: list[BufferRuns], inputs: dict[str, np.ndarray], k: float = 2.0) -> CaseVerdict:
    """The case's verdict over its written buffers (``inputs``: each input buffer's lanes as float64)."""
    worst_ratio, worst = 0.0, CaseVerdict("pass")
    for b in buffers:
        wrote = ~b.original_unwritten
        oracle_finite = np.isfinite(b.oracle)
        ref = b.original[0]
        ref_finite = np.isfinite(ref)
        mask = wrote & oracle_finite
        if np.any(mask & ~ref_finite):
            i = int(np.flatnonzero(mask & ~ref_finite)[0])
            return CaseVerdict("original broken", "non-finite", b.name,
                               f"the original gives {ref[i]} at [{i}] where the oracle gives {b.oracle[i]:.6g}")
        ref_err = _error(ref, b.oracle, mask)
        if b.family != "int" and ref_err > BROKEN.get(b.size if b.family == "float" else 2, 1e-3):
            return CaseVerdict("original broken", "far off", b.name,
                               f"the original is {ref_err:.3g} (relative) from the oracle", ref_err)
        port = b.port[0]
        # unwritten: the sentinel survives where the original wrote
        lost = wrote & b.port_unwritten[0]
        if lost.any():
            idx = np.flatnonzero(lost)
            return CaseVerdict("fail", "unwritten", b.name, f"{len(idx)} element(s) never written by the port, "
                               f"first [{int(idx[0])}]", ref_err, float("inf"), _worst(idx, b))
        # non-finite where the original and the oracle are finite
        bad = mask & ref_finite & ~np.isfinite(port)
        if bad.any():
            idx = np.flatnonzero(bad)
            return CaseVerdict("fail", "non-finite", b.name, f"{len(idx)} element(s) non-finite in the port only, "
                               f"first [{int(idx[0])}] = {port[idx[0]]}", ref_err, float("inf"), _worst(idx, b))
        # nondeterministic: the port's runs differ where the original's agree
        if len(b.port_bits) > 1 and b.port_bits[0] != b.port_bits[1] and (
                len(b.original_bits) < 2 or b.original_bits[0] == b.original_bits[1]):
            diff = np.flatnonzero((b.port[0] != b.port[1]) & wrote & np.isfinite(b.port[0]))
            return CaseVerdict("fail", "nondeterministic", b.name, f"two runs of the port differ at {len(diff)} "
                               "element(s) (the original's agree)", ref_err, _error(port, b.oracle, mask),
                               _worst(diff, b))
        # identity: the port's output equals an input, the original's does not
        n = int(wrote.sum())
        for name, arr in inputs.items():
            if n >= 1 and len(arr) >= len(port) and np.array_equal(port[wrote], arr[:len(port)][wrote]) and \
                    not np.array_equal(ref[wrote], arr[:len(ref)][wrote]):
                return CaseVerdict("fail", "identity", b.name, f"the port's output equals input {name}", ref_err,
                                   _error(port, b.oracle, mask))
        port_err = _error(port, b.oracle, mask)
        floor = FLOOR_ULPS * eps(b.family, b.size) if b.family != "int" else 0.0
        allowed = k * max(ref_err, floor)
        if port_err > allowed:
            with np.errstate(invalid="ignore"):
                diff = np.abs(np.where(mask, port - b.oracle, 0))
            idx = np.argsort(-diff)[:5]
            return CaseVerdict("fail", "triangle", b.name, f"port error {port_err:.3g} > {k:g} x max(original "
                               f"{ref_err:.3g}, floor {floor:.3g})", ref_err, port_err, _worst(idx, b))
        ratio = port_err / allowed if allowed else 0.0
        if ratio >= worst_ratio:
            worst_ratio = ratio
            worst = CaseVerdict("pass", "", b.name, "", ref_err, port_err)
    return worst


def _worst(idx, b: BufferRuns) -> list[tuple[int, float, float, float]]:
    return [(int(i), float(b.oracle[i]), float(b.original[0][i]), float(b.port[0][i])) for i in list(idx)[:5]]
