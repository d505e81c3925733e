"""Inputs that find bugs: shapes that straddle 32 and 64 lanes and block sizes, seven distributions, sentinels.

Everything is generated on the CPU from a seed (numpy's PCG64), so the reference machine and the AMD machine
feed identical bytes. The innermost swept dimension takes ``INNER`` (1, 31-33, 63-65, 127-129, primes, one large
value, the large one shrunk while a buffer would pass ``MAX_ELEMENTS``); the other swept dimensions take 2, and
one more shape sets them all to 3. Output buffers start as a sentinel NaN (or 0xA5 bytes for integers) that no
arithmetic produces, so an element a kernel never wrote is seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hipwizard.parity.kernels.bounds import INDEX_RANGE
from hipwizard.parity.kernels.spec import FLOAT_TYPES, KernelSpec, element

INNER = (1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 97, 251, 4099)
STRIDE = re.compile(r"(?i)^ld[a-z]?$|stride|pitch")
STRIDED, PAD, OFFSET, OFFSET_KEY = (33, 129), 3, 1, "hw_offset"
DISTRIBUTIONS = ("normal", "large", "tiny", "mixed_sign", "constant", "sparse", "monotonic")
MAX_ELEMENTS = 1 << 22
BF16_NAMES = {"__nv_bfloat16", "nv_bfloat16", "hip_bfloat16", "__hip_bfloat16", "bf16", "floatX"}
_SENTINEL_BITS = {2: 0x7DA5, 4: 0x7FA5A5A5, 8: 0x7FF4A5A5A5A5A5A5}


@dataclass(frozen=True)
class Kind:
    """How a buffer's bytes are read: ``float`` (IEEE of ``size`` bytes), ``bf16`` or ``int`` (signed or not)."""

    family: str
    size: int
    signed: bool = True

    @property
    def tag(self) -> str:
        """The safetensors dtype tag of these bytes."""
        if self.family == "bf16":
            return "BF16"
        if self.family == "float":
            return {2: "F16", 4: "F32", 8: "F64"}[self.size]
        return {1: "I8" if self.signed else "U8", 2: "I16", 4: "I32", 8: "I64"}[self.size]

    @property
    def numpy(self):
        if self.family == "bf16":
            return np.uint16
        if self.family == "float":
            return {2: np.float16, 4: np.float32, 8: np.float64}[self.size]
        return {1: np.int8 if self.signed else np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}[self.size]


def kind_of(type_text: str, element_bytes: int) -> Kind:
    """The bytes' kind for one element *lane* of a buffer of ``type_text`` whose elements take ``element_bytes``."""
    base, lanes = element(type_text) or ("int", 1)
    size = max(element_bytes // lanes, 1)
    if base in FLOAT_TYPES:
        if size == 2:
            return Kind("bf16" if base in BF16_NAMES else "float", 2)
        return Kind("float", size)
    return Kind("int", size, not base.startswith("u"))


def stride_dims(spec: KernelSpec) -> list[str]:
    """The swept dimensions that are a row stride (``lda``, ``stride``, ``in_stride``, ``pitch``)."""
    return [d for d in spec.swept if STRIDE.search(d)]


def shapes(spec: KernelSpec) -> list[dict[str, int]]:
    """The sweep's dimension values: the innermost swept dimension over ``INNER``, the others at 2; all at 3.
    A kernel that takes a stride gets contiguous rows (stride = the inner size) and also strided / offset layouts:
    rows padded by ``PAD`` elements, and the same with every buffer starting ``OFFSET`` element into its
    allocation (the ``hw_offset`` key: how a view of a larger tensor reaches the kernel)."""
    base = dict(spec.dims)
    if not spec.swept:
        return [base]
    strides = stride_dims(spec)
    plain = [d for d in spec.swept if d not in strides] or spec.swept
    inner = plain[-1]
    out = []
    for value in INNER:
        dims = {**base, **{d: 2 for d in spec.swept}, inner: value, **{s: value for s in strides}}
        out.append(dims)
    out.append({**base, **{d: 3 for d in spec.swept}})
    for value in (STRIDED if strides else ()):
        padded = {**base, **{d: 2 for d in spec.swept}, inner: value, **{s: value + PAD for s in strides}}
        out += [padded, {**padded, OFFSET_KEY: OFFSET}]
    return out


def decode(raw: np.ndarray, kind: Kind) -> np.ndarray:
    """Lane values as float64 (bf16 widened exactly)."""
    with np.errstate(invalid="ignore"):  # the sentinel is a signalling NaN: widening it is expected
        if kind.family == "bf16":
            return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return raw.astype(np.float64)


def encode(values: np.ndarray, kind: Kind) -> np.ndarray:
    """float64 values as ``kind``'s lanes (bf16 rounded to nearest even)."""
    if kind.family == "bf16":
        bits = values.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    if kind.family == "int":
        return values.astype(kind.numpy)
    return values.astype(kind.numpy)


def sentinel(count: int, kind: Kind) -> np.ndarray:
    """``count`` lanes of the sentinel."""
    if kind.family == "int":
        return np.frombuffer(b"\xa5" * (count * kind.size), dtype=kind.numpy).copy()
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[kind.size]
    return np.full(count, _SENTINEL_BITS[kind.size], dtype=bits).view(kind.numpy if kind.family == "float"
                                                                      else np.uint16)


def is_sentinel(raw: np.ndarray, kind: Kind) -> np.ndarray:
    """Per lane: still the sentinel's bytes."""
    if kind.family == "int":
        return raw.view(np.uint8).reshape(len(raw), kind.size).__eq__(0xA5).all(axis=1) if len(raw) else raw == 0
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[kind.size]
    return raw.view(bits) == _SENTINEL_BITS[kind.size]


def values(dist: str, count: int, kind: Kind, rng: np.random.Generator) -> np.ndarray:
    """``count`` float64 values of distribution ``dist``, representable in ``kind`` (ints: indices below 8)."""
    if kind.family == "int":
        return rng.integers(0, INDEX_RANGE, count).astype(np.float64)
    half = kind.size == 2
    if dist == "normal":
        v = rng.standard_normal(count)
    elif dist == "large":
        v = rng.standard_normal(count) * (1e2 if half else 1e4)
    elif dist == "tiny":
        v = rng.standard_normal(count) * (1e-5 if half else 1e-39 if kind.size == 4 else 1e-300)
    elif dist == "mixed_sign":
        v = rng.uniform(0.5, 2.0, count) * np.where(np.arange(count) % 2, -1.0, 1.0)
    elif dist == "constant":
        v = np.full(count, 1.25)
    elif dist == "sparse":
        v = rng.standard_normal(count) * (rng.random(count) < 0.1)
    elif dist == "monotonic":
        v = np.linspace(-3.0, 3.0, count) if count > 1 else np.zeros(count)
    else:
        raise ValueError(dist)
    return decode(encode(v, kind), kind)
