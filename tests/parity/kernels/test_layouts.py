"""Strided and offset layouts for kernels that take a stride: padded rows, and buffers that start into their
allocation (a view of a larger tensor), run through the driver's HW_OFFSET."""

from __future__ import annotations

import dataclasses
import stat
import sys
from pathlib import Path

import pytest

from hipwizard.parity.kernels.inputs import OFFSET_KEY, PAD, shapes, stride_dims
from hipwizard.parity.kernels.run import sweep
from hipwizard.parity.kernels.spec import Buffer, KernelSpec, Scalar
from tests.parity.kernels.test_sweep import FAKE, SPEC

ROWS = KernelSpec("rows", "k.cu", 1, [], [Buffer("x", "float", "in", "rows * lda + cols"),
                                          Buffer("y", "float", "out", "rows * lda + cols")],
                  [Scalar("rows", "int", "rows"), Scalar("cols", "int", "cols"), Scalar("lda", "int", "lda")],
                  {"rows": 4, "cols": 4, "lda": 4}, ["rows", "lda", "cols"], ["rows", "1", "1"], ["256", "1", "1"], "0")


def test_a_stride_gets_contiguous_padded_and_offset_layouts():
    assert stride_dims(ROWS) == ["lda"] and stride_dims(SPEC) == []
    got = shapes(ROWS)
    contiguous = [d for d in got if d["lda"] == d["cols"]]
    assert {d["cols"] for d in contiguous} >= {1, 32, 33, 129, 4099}  # the inner size straddles; lda follows it
    padded = [d for d in got if d["lda"] == d["cols"] + PAD]
    assert padded and {d["cols"] for d in padded} == {33, 129}
    assert sum(1 for d in padded if d.get(OFFSET_KEY)) == 2 and sum(1 for d in got if d.get(OFFSET_KEY)) == 2
    assert not any(OFFSET_KEY in d or "lda" in d for d in shapes(SPEC))  # no stride: no extra layouts


def _driver(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"driver-{mode}"
    path.write_text(f'#!/bin/sh\nFAKE_MODE={mode} exec {sys.executable} {FAKE} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.slow
def test_a_port_wrong_only_on_a_view_fails_on_the_offset_case(tmp_path):
    spec = dataclasses.replace(SPEC, dims={"n": 4, "stride": 4}, swept=["n", "stride"])
    bins = {"original": _driver(tmp_path, "exact"), "twin": _driver(tmp_path, "twin"),
            "port": _driver(tmp_path, "aligned")}
    dims = [d for d in shapes(spec) if d["n"] in (33, 129)]
    res = sweep(spec, 0, bins, tmp_path / "w", dims_list=dims, distributions=("normal",))
    assert res.status == "fail" and res.first_failure is not None
    assert res.first_failure.dims.get(OFFSET_KEY) == 1 and res.first_failure.dims["stride"] == 33 + PAD
    passed = [c for c in res.cases if c.verdict.status == "pass"]
    assert passed and not any(c.dims.get(OFFSET_KEY) for c in passed)  # contiguous and padded rows pass
