"""A reference the user names in the spec (a torch expression over the buffers) as the oracle instead of the twin:
checked when the spec is read, evaluated in a subprocess, judged like the twin."""

from __future__ import annotations

import dataclasses
import stat
import sys
from pathlib import Path

import pytest

from hipwizard.parity.kernels.reference import check_expression
from hipwizard.parity.kernels.run import sweep
from tests.parity.kernels.test_sweep import FAKE, SPEC


def _with(reference: str):
    return dataclasses.replace(SPEC, reference=reference)


def test_a_reference_is_checked_before_anything_runs():
    assert check_expression(_with("")) == ""
    assert check_expression(_with("2 * x")) == ""
    assert check_expression(_with("F.relu(x) * n")) == ""  # functional, a dimension
    assert check_expression(_with('{"y": x * 2}')) == ""
    assert "does not parse" in check_expression(_with("2 * (x"))
    assert "'z'" in check_expression(_with("z * 2"))  # an unknown name, and the names it may use
    assert "an output" in check_expression(_with("y * 2"))  # the written buffer is what it computes
    assert "not allowed" in check_expression(_with("x.__class__"))
    assert "keys are the written buffers" in check_expression(_with('{"x": x}'))


def _driver(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"driver-{mode}"
    path.write_text(f'#!/bin/sh\nFAKE_MODE={mode} exec {sys.executable} {FAKE} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _run(tmp_path, reference, port="exact"):
    bins = {"original": _driver(tmp_path, "exact"), "port": _driver(tmp_path, port)}  # no twin at all
    dims = [{"n": n, "block": 32} for n in (1, 33)]
    return sweep(_with(reference), 0, bins, tmp_path / "work", dims_list=dims, distributions=("normal",))


@pytest.mark.slow
def test_the_named_reference_is_the_oracle(tmp_path):
    ok = _run(tmp_path, "2 * x[:n]")
    assert ok.status == "pass" and ok.counts == {"pass": 2}  # no twin was built: the reference judged
    tail = _run(tmp_path, "2 * x[:n]", port="tail")
    assert tail.first_failure is not None and tail.first_failure.verdict.detector == "unwritten"
    wrong = _run(tmp_path, "3 * x[:n]")  # the original disagrees with the user's reference: it is reported
    assert wrong.status == "original broken"
    assert wrong.cases and all(c.verdict.status == "original broken" for c in wrong.cases)
    bad = _run(tmp_path, "x.reshape(7, -1)")  # fails at run time: the oracle is missing, said per case
    assert bad.cases and all(c.verdict.status == "oracle missing" and "[7, -1]" in c.verdict.detail
                             for c in bad.cases)
