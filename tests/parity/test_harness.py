from __future__ import annotations

import textwrap

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.requests import RunOptions, Subject
from hipwizard.parity.runs import compare_rerun, compare_same_machine
from hipwizard.parity.services import run_capture as capture

pytestmark = pytest.mark.slow

HARNESS = textwrap.dedent("""
    import torch

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def split(x):
        return x.chunk(2, dim=-1)

    def cases():
        g = torch.Generator().manual_seed(0)
        x = torch.randn(8, 64, generator=g)
        return {"rmsnorm": (rmsnorm, [x, torch.ones(64)]), "gelu": (torch.nn.functional.gelu, [x]),
                "split": (split, [x])}
""")


def test_harness_same_machine_and_rerun(tmp_path):
    path = tmp_path / "harness.py"
    path.write_text(HARNESS)
    comp = compare_same_machine(Subject(harness=path), RunOptions(dtype="bf16", device="cpu"))
    assert comp.verdict == "pass"
    assert [layer.name for layer in comp.layers] == ["rmsnorm", "gelu", "split.0", "split.1"]
    assert comp.reference["harness"]["name"] == "harness.py"
    ref = capture(Subject(harness=path), RunOptions(dtype="fp32", device="cpu"), tmp_path / "ref.safetensors")
    again = compare_rerun(ref.path, Subject(harness=path), RunOptions(dtype="fp32", device="cpu"))
    assert again.verdict == "pass" and again.layers and all(layer.metrics.max_abs == 0 for layer in again.layers)
    with pytest.raises(UserError, match="harness capture"):
        compare_rerun(ref.path, Subject(model=tmp_path), RunOptions(device="cpu"))


def test_broken_harnesses_are_user_errors(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(UserError, match="must define CASES"):
        capture(Subject(harness=empty), RunOptions(device="cpu"), tmp_path / "o.safetensors")
    boom = tmp_path / "boom.py"
    boom.write_text("def f(x):\n    raise RuntimeError('kernel launch failed')\nimport torch\nCASES = {'f': (f, [torch.ones(2)])}\n")
    with pytest.raises(UserError, match="case 'f' raised RuntimeError: kernel launch failed"):
        capture(Subject(harness=boom), RunOptions(device="cpu"), tmp_path / "o.safetensors")
    assert not (tmp_path / "o.safetensors").exists()
