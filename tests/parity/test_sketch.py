"""The sketches a gradient capture stores equal their definitions, batched or not, on any split of the batch."""

from __future__ import annotations

import numpy as np
import pytest

from hipwizard.parity.capture import sketch

torch = pytest.importorskip("torch")


def _count_definition(x: np.ndarray, size: int) -> np.ndarray:
    """y[h(i)] += s(i)·x[i], written out element by element from the hash's definition."""
    gen = torch.Generator(device="cpu").manual_seed(sketch.SEED)
    a, b, c, d = (int(v) for v in torch.randint(1, sketch._PRIME, (4,), generator=gen))
    y = np.zeros(size)
    for i, v in enumerate(x.ravel().astype(np.float64)):
        y[((i * a + b) % sketch._PRIME) % size] += (1.0 if ((i * c + d) % sketch._PRIME) & 1 else -1.0) * v
    return y


@pytest.mark.parametrize("stack", [1 << 26, 50])
def test_count_sketches_equal_their_definition_batched_or_not(monkeypatch, stack):
    monkeypatch.setattr(sketch, "_STACK", stack)  # 50: every tensor in a batch of its own
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(3, 40, generator=gen), torch.randn(3, 40, generator=gen), torch.randn(7, generator=gen).double()]
    got = sketch.count_sketch_many(xs, 16)
    for x, y in zip(xs, got, strict=True):
        assert y.dtype == torch.float64 and y.shape == (16,)
        assert np.allclose(y.numpy(), _count_definition(x.numpy(), 16), rtol=1e-12, atol=1e-12)
    # linear and norm-keeping on average: the sketch of a difference is the difference of the sketches
    assert torch.allclose(sketch.count_sketch(xs[0] - xs[1], 16), got[0] - got[1], atol=1e-12)


def test_rank_sketches_equal_their_definition_batched_by_shape():
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(12, 40, generator=gen), torch.randn(6, 40, generator=gen), torch.randn(12, 40, generator=gen)]
    got = sketch.sketch_many(grads, 4)
    for g, y in zip(grads, got, strict=True):
        a, b = sketch._projections(g.shape[0], g.shape[1], 4, sketch.SEED, "cpu")
        want = torch.cat(((g.double() @ a.T).reshape(-1), (b.T @ g.double()).reshape(-1))).float()
        assert y.shape == (sketch.sketch_size(g.shape, 4),) and torch.allclose(y, want, rtol=1e-6, atol=1e-7)
