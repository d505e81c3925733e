"""The shared-memory race detector: compute-sanitizer's reports read, judged against the original's, and added to a
sweep whose value detectors all pass (a missing barrier that never shows in the outputs)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from hipwizard.parity.kernels.run import sweep
from hipwizard.parity.kernels.sanitize import EXIT_HAZARD, SanitizerRun, judge_sanitizer, parse, uses_shared_memory
from tests.parity.kernels.test_sweep import FAKE, SPEC

RACE = """========= COMPUTE-SANITIZER
ok 0
========= Error: Race reported between Write access at softmax_forward_kernel2(float *, const float *, int, int)+0x1a0 in softmax_forward.cu:137
=========     and Read access at softmax_forward_kernel2(float *, const float *, int, int)+0x2b0 in softmax_forward.cu:142 [248 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
CLEAN = "========= COMPUTE-SANITIZER\nok 0\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
REFUSED = "========= COMPUTE-SANITIZER\n========= Error: Device not supported\n"


def test_reports_are_read():
    race = parse("racecheck", EXIT_HAZARD, RACE)
    assert race.status == "hazards" and race.errors == 1 and "softmax_forward.cu:137" in race.first
    assert parse("racecheck", 0, CLEAN).status == "clean"
    refused = parse("racecheck", 1, REFUSED)
    assert refused.status == "unavailable" and "Device not supported" in refused.first
    assert parse("racecheck", 0, "").status == "unavailable"  # the driver never said ok: nothing was checked


def test_a_race_in_the_port_only_fails_it_one_in_both_is_the_originals():
    race, clean = parse("racecheck", EXIT_HAZARD, RACE), parse("racecheck", 0, CLEAN)
    v = judge_sanitizer(clean, race)
    assert v is not None and v.status == "fail" and v.detector == "race"
    both = judge_sanitizer(race, race)
    assert both is not None and both.status == "original broken"
    assert judge_sanitizer(race, clean) is None and judge_sanitizer(clean, clean) is None
    gone = SanitizerRun("racecheck", "unavailable", 0, "Device not supported")
    assert judge_sanitizer(gone, race) is None  # no verdict on half a check
    sync = judge_sanitizer(SanitizerRun("synccheck", "clean"), SanitizerRun("synccheck", "hazards", 2, "x"))
    assert sync is not None and sync.detector == "barrier"


def test_only_kernels_touching_shared_memory_are_checked():
    assert uses_shared_memory("__shared__ float s[256]; s[threadIdx.x] = 0;", "0")
    assert uses_shared_memory("extern float s[];", "block * 4")
    assert not uses_shared_memory("out[i] = in[i] * 2;", "0")


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.slow
def test_a_sweep_that_passes_every_value_detector_fails_on_the_race(tmp_path):
    """The planted missing barrier: the port's outputs equal the original's, so only the sanitizer can see it."""
    drivers = {m: _exe(tmp_path / f"driver-{m}", f'#!/bin/sh\nFAKE_MODE={m} exec {sys.executable} {FAKE} "$@"\n')
               for m in ("exact", "twin", "racy")}
    race_lines = "".join(f"echo '{ln}'\n" for ln in RACE.splitlines() if not ln.startswith("ok"))
    san = _exe(tmp_path / "compute-sanitizer", "#!/bin/sh\n"  # stands in for the tool: runs the driver, and
               "while [ \"${1#-}\" != \"$1\" ]; do shift 2; done\n"  # calls the racy one's accesses a race
               "\"$@\"\nrc=$?\n"
               f"case \"$1\" in *racy*) {race_lines.replace(chr(10), '; ')} exit {EXIT_HAZARD};; esac\nexit $rc\n")
    bins = {"original": drivers["exact"], "twin": drivers["twin"], "port": drivers["racy"]}
    dims = [{"n": n, "block": 32} for n in (1, 129)]
    plain = sweep(SPEC, 0, bins, tmp_path / "w0", dims_list=dims, distributions=("normal",))
    assert plain.status == "pass"  # without the sanitizer the race is invisible
    res = sweep(SPEC, 0, bins, tmp_path / "w1", dims_list=dims, distributions=("normal",), sanitizer=str(san),
                tools=("racecheck",))
    assert res.status == "fail" and res.first_failure is not None
    assert res.first_failure.verdict.detector == "race" and res.first_failure.dims["n"] == 129
    assert "softmax_forward.cu:137" in res.first_failure.verdict.detail
    assert res.checks == ["racecheck: original clean, port hazards"]
