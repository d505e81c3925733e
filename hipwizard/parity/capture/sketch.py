"""Compact weight gradients: what a rank-r LoRA would receive, instead of the whole ∂W.

A LoRA target's full weight gradient ∂W (out × in) is most of a backward capture (192 of 339 MB on a
16-layer, hidden-2048 model). Stored instead, in float32 (float64 for an fp64 capture), is one 1-D tensor

    [ (∂W · Aᵀ).ravel() , (Bᵀ · ∂W).ravel() ]      A: r × in, B: out × r

with A and B fixed Gaussian matrices drawn from a seeded CPU generator (identical on every machine; entries
N(0, 1/in) and N(0, 1/out), so sketch entries have the size of ∂W's). ∂W·Aᵀ is what a rank-r LoRA's B would
receive with A frozen, Bᵀ·∂W what its A would receive with B frozen: r·(out + in) numbers instead of out·in
(64x smaller for 2048 × 2048 at r = 16). A random projection keeps the norm of the error: a wrong ∂W + E
gives a sketch error of about ‖E‖ relative to ‖∂W‖ in expectation, so the rel L2 error, the cosine and the
triangle ratio of a sketch row track those of the full gradient, and a wrong weight gradient is missed only
if E happens to lie in the null space of both projections (probability zero for an error not built for
it). What is lost: per-element numbers (max |Δ|, worst elements) describe sketch entries, not weights.
The products run in float64, so the sketch adds no rounding of its own at any capture dtype.

torch is imported inside the functions.
"""

from __future__ import annotations

import math
from functools import lru_cache

DEFAULT_RANK = 16
SEED = 1717  # fixed: both sides must draw the very same A and B


def applies(shape, rank: int) -> bool:
    """Whether a parameter of ``shape`` is stored as a rank-``rank`` sketch: 2-D and the sketch smaller
    than the gradient (LoRA's own small lora_A/lora_B matrices stay whole)."""
    return rank > 0 and len(shape) == 2 and rank * (shape[0] + shape[1]) < shape[0] * shape[1]


def sketch_size(shape, rank: int) -> int:
    """Number of values in the sketch of a ``shape`` gradient."""
    return rank * (shape[0] + shape[1])


@lru_cache(maxsize=32)
def _projections(out: int, inp: int, rank: int, seed: int, device: str):
    import torch  # heavy: torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn((rank, inp), generator=gen, dtype=torch.float32).to(torch.float64) / math.sqrt(inp)
    b = torch.randn((out, rank), generator=gen, dtype=torch.float32).to(torch.float64) / math.sqrt(out)
    return a.to(device), b.to(device)


def sketch(grad, rank: int = DEFAULT_RANK, seed: int = SEED):
    """The 1-D sketch of a 2-D gradient (see the module docstring), on the gradient's device."""
    return sketch_many([grad], rank, seed)[0]


# Elements per stacked batch (float64): bounds the temporaries of the batched forms (512 MB).
_STACK = 1 << 26


def _batches(tensors: list, key) -> list[list[int]]:
    """Indices of ``tensors`` grouped by ``key`` (same device and shape), each group cut to ``_STACK`` elements."""
    groups: dict = {}
    for i, t in enumerate(tensors):
        groups.setdefault((key(t), str(t.device), t.dtype), []).append(i)
    out = []
    for members in groups.values():
        per = max(1, _STACK // max(1, tensors[members[0]].numel()))
        out += [members[j:j + per] for j in range(0, len(members), per)]
    return out


def sketch_many(grads: list, rank: int = DEFAULT_RANK, seed: int = SEED) -> list:
    """``sketch`` of each 2-D gradient, same-shape ones in one batched product (a capture sketches every
    LoRA target: one pair of products per shape instead of per weight keeps the host from launching
    hundreds of small kernels)."""
    import torch  # heavy: torch

    result: list = [None] * len(grads)
    for members in _batches(grads, lambda g: tuple(g.shape)):
        first = grads[members[0]]
        out, inp = first.shape
        a, b = _projections(out, inp, rank, seed, str(first.device))
        g = torch.stack([grads[i].detach() for i in members]).to(torch.float64)
        flat = torch.cat(((g @ a.T).reshape(len(members), -1), (b.T @ g).reshape(len(members), -1)), 1)
        flat = flat if first.dtype == torch.float64 else flat.to(torch.float32)
        for i, row in zip(members, flat.unbind(0), strict=True):
            result[i] = row
    return result


# ---- Count sketches of activation gradients ------------------------------------------------------------
# ∂out and ∂in of every hooked module are most of a gradient capture once ∂W is sketched (the medium
# benchmark model: ~94 of its 145 MB), and writing them is what a backward capture's cost was bound by
# (docs/parity.md). Stored instead, unless --grad-elements: a count sketch of COUNT_SIZE values,
#     y[h(i)] += s(i) · x[i]        (float64)
# with h (bucket) and s (±1) from a seeded multiply-add hash of the flat position i, computed with integer
# arithmetic (identical on every machine and device). The sketch is linear, so sketch(c) - sketch(r) is the
# sketch of c - r, and E‖sketch(x)‖² = ‖x‖²: the rel L2 error and the cosine of two sketches estimate those
# of the full tensors, with a relative spread of about 1/√COUNT_SIZE (~1.1% at 8,192) on the rel L2.
# Lost, as for ∂W: per-element numbers (max |Δ|, the worst elements, the share outside tolerance).

COUNT_SIZE = 8192
_PRIME = (1 << 31) - 1  # positions below 2**31 times factors below 2**31 stay inside int64


def count_form(size: int = COUNT_SIZE) -> str:
    """The ``form`` a count-sketched row records in the capture's metadata."""
    return f"count-sketch {size}"


def count_sketch(x, size: int = COUNT_SIZE, seed: int = SEED):
    """The float64 count sketch (``size`` values) of tensor ``x``, on ``x``'s device."""
    return count_sketch_many([x], size, seed)[0]


def count_sketch_many(tensors: list, size: int = COUNT_SIZE, seed: int = SEED) -> list:
    """``count_sketch`` of each tensor, same-size ones stacked into one scatter (see ``sketch_many``)."""
    import torch  # heavy: torch

    result: list = [None] * len(tensors)
    for members in _batches(tensors, lambda t: t.numel()):
        n = tensors[members[0]].numel()
        if n >= _PRIME:
            raise ValueError(f"a tensor of {n} elements is too large to count-sketch")
        device = tensors[members[0]].device
        bucket, sign = _hashes(n, size, seed, str(device))
        x = torch.stack([tensors[i].detach().reshape(-1) for i in members]).to(torch.float64).mul_(sign)
        out = torch.zeros((len(members), size), dtype=torch.float64, device=device).index_add_(1, bucket, x)
        for i, row in zip(members, out.unbind(0), strict=True):
            result[i] = row
    return result


@lru_cache(maxsize=16)
def _hashes(n: int, size: int, seed: int, device: str):
    import torch  # heavy: torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    a, b, c, d = (int(v) for v in torch.randint(1, _PRIME, (4,), generator=gen))
    i = torch.arange(n, dtype=torch.int64, device=device)
    bucket = ((i * a + b) % _PRIME) % size
    sign = (((i * c + d) % _PRIME) & 1).to(torch.float64).mul_(2).sub_(1)
    return bucket, sign


def count_sketch_named(tensors: dict, size: int = COUNT_SIZE) -> tuple[dict, dict[str, dict]]:
    """``tensors`` with those larger than ``size`` replaced by their count sketches (batched), and the form
    ({"form", "full_shape"}) of each one replaced, for the capture's metadata."""
    big = [n for n, t in tensors.items() if t.numel() > size]
    forms = {n: {"form": count_form(size), "full_shape": list(tensors[n].shape)} for n in big}
    out = dict(tensors)
    out.update(zip(big, count_sketch_many([tensors[n] for n in big], size), strict=True))
    return out, forms
