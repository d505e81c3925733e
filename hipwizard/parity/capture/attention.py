"""Attention backends by the names ``--attn`` takes, for one run or the attention-backend matrix.

``eager``, ``sdpa``, ``fa2`` (flash_attention_2), ``fa3``, ``flex`` are transformers' implementations;
``sdpa-flash``, ``sdpa-efficient``, ``sdpa-math``, ``sdpa-cudnn`` are SDPA pinned to one of torch's kernels
(``torch.nn.attention.sdpa_kernel``): on ROCm these are where the reported backward bugs live. Any other
name goes to transformers unchanged. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib

HF_NAMES = {"fa2": "flash_attention_2", "fa3": "flash_attention_3", "flex": "flex_attention"}
SDPA_KERNELS = {"sdpa-flash": "FLASH_ATTENTION", "sdpa-efficient": "EFFICIENT_ATTENTION", "sdpa-math": "MATH",
                "sdpa-cudnn": "CUDNN_ATTENTION"}


def hf_implementation(attn: str | None) -> str | None:
    """The ``attn_implementation`` to load the model with."""
    if attn is None:
        return None
    if attn in SDPA_KERNELS:
        return "sdpa"
    return HF_NAMES.get(attn, attn)


def kernel_context(attn: str | None):
    """A context pinning SDPA to one kernel for ``sdpa-*`` names; a no-op otherwise."""
    if attn not in SDPA_KERNELS:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel  # heavy: torch

    return sdpa_kernel(getattr(SDPBackend, SDPA_KERNELS[attn]))
