"""Tensors in flight during a capture, shared by the forward pass (``model``) and the backward pass
(``backward``): a perturbation hook that shows what a broken kernel looks like, and the device-to-host copy.

torch is imported inside the functions (this module is importable without it).
"""

from __future__ import annotations


def perturbation_hook(scale: float, seed: int = 1234):
    """A forward hook adding Gaussian noise of relative size ``scale`` to a module's output.

    Shows what a broken kernel looks like; tests use it to check the first divergent module.
    """
    import torch  # heavy: torch

    def hook(_module, _args, output):
        first = output[0] if isinstance(output, tuple) else output
        gen = torch.Generator(device="cpu").manual_seed(seed)
        noise = torch.randn(first.shape, generator=gen, dtype=torch.float32).to(first.device, first.dtype)
        noisy = first + noise * (first.float().std() * scale).to(first.dtype)
        return (noisy, *output[1:]) if isinstance(output, tuple) else noisy

    return hook


def host_copy(tensors: dict) -> dict:
    """The tensors on the CPU. From a GPU: one device->host copy per dtype into pinned memory (torch's
    caching host allocator keeps the buffer), not one pageable, synchronising copy per tensor."""
    import torch  # heavy: torch

    if not tensors or not all(t.is_cuda for t in tensors.values()):
        return {n: t.to("cpu").contiguous() for n, t in tensors.items()}
    out: dict = {}
    by_dtype: dict = {}
    for n, t in tensors.items():
        by_dtype.setdefault(t.dtype, []).append(n)
    for dtype, names in by_dtype.items():
        flat = torch.cat([tensors[n].reshape(-1) for n in names])
        host = torch.empty(flat.numel(), dtype=dtype, pin_memory=True)
        host.copy_(flat, non_blocking=True)
        offset = 0
        for n in names:
            size = tensors[n].numel()
            out[n] = host[offset:offset + size].view(tensors[n].shape)
            offset += size
    torch.cuda.synchronize()
    return {n: out[n] for n in tensors}
