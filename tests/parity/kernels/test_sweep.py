"""The sweep's machinery (sizes, manifests, sentinels, resuming after a crash, verdicts) with a stand-in driver."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from hipwizard.parity.kernels.run import minimal_failure, sweep
from hipwizard.parity.kernels.spec import Buffer, KernelSpec, Scalar
from hipwizard.parity.tensorfile import read_tensor_file

FAKE = Path(__file__).with_name("fake_driver.py")
SPEC = KernelSpec("twice", "k.cu", 1, [], [Buffer("x", "float", "in", "n + 1"), Buffer("y", "float", "out", "n + 1")],
                  [Scalar("n", "int", "n")], {"n": 4, "block": 32}, ["n"], ["hw_cdiv(n, 32)", "1", "1"],
                  ["block", "1", "1"], "0", order="bbs")


def _driver(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"driver-{mode}"
    path.write_text(f"#!/bin/sh\nFAKE_MODE={mode} exec {sys.executable} {FAKE} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _run(tmp_path, port_mode, **kw):
    bins = {"original": _driver(tmp_path, "exact"), "twin": _driver(tmp_path, "twin"),
            "port": _driver(tmp_path, port_mode)}
    dims = [{"n": n, "block": 32} for n in (1, 33, 65)]
    return sweep(SPEC, 0, bins, tmp_path / "work", dims_list=dims, distributions=("normal", "constant"), **kw)


@pytest.mark.slow
def test_exact_port_passes_and_the_capture_is_written(tmp_path):
    res = _run(tmp_path, "exact", capture=tmp_path / "k.safetensors", stamp={"hipwizard": "test"})
    assert res.status == "pass" and res.counts == {"pass": 6}
    tf = read_tensor_file(tmp_path / "k.safetensors")
    assert "case0/x" in tf.tensors and "port/case5/y" in tf.tensors


@pytest.mark.slow
def test_tail_bug_named_with_its_first_and_minimal_case(tmp_path):
    res = _run(tmp_path, "tail")
    assert res.status == "fail"
    first = res.first_failure
    assert first.verdict.detector == "unwritten" and first.dims["n"] == 1 and first.distribution == "normal"
    assert minimal_failure(res).dims["n"] == 1


@pytest.mark.slow
def test_nondeterministic_port_and_a_crash_resumed(tmp_path):
    res = _run(tmp_path, "flaky")
    assert res.first_failure.verdict.detector == "nondeterministic"
    res = _run(tmp_path, "crash")
    crashed = [c for c in res.cases if c.verdict.detector == "crash"]
    assert [c.index for c in crashed] == [3]  # the driver died on case 3; the cases after it still ran
    assert sum(1 for c in res.cases if c.verdict.status == "pass") == 5
