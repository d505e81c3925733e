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
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn((rank, inp), generator=gen, dtype=torch.float32).to(torch.float64) / math.sqrt(inp)
    b = torch.randn((out, rank), generator=gen, dtype=torch.float32).to(torch.float64) / math.sqrt(out)
    return a.to(device), b.to(device)


def sketch(grad, rank: int = DEFAULT_RANK, seed: int = SEED):
    """The 1-D sketch of a 2-D gradient (see the module docstring), on the gradient's device."""
    import torch

    out, inp = grad.shape
    a, b = _projections(out, inp, rank, seed, str(grad.device))
    g = grad.detach().to(torch.float64)
    flat = torch.cat(((g @ a.T).reshape(-1), (b.T @ g).reshape(-1)))
    return flat if grad.dtype == torch.float64 else flat.to(torch.float32)
