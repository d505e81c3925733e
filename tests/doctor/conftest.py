from __future__ import annotations

from pathlib import Path

import pytest

from hipwizard.doctor.probe.replay import read_recording

ROCM = Path(__file__).parent.parent / "fixtures" / "rocm"
ENVS = Path(__file__).parent.parent / "fixtures" / "doctor"


def fixture_result(name: str):
    """A shared real output as a RunResult (header stripped, stdout/stderr split)."""
    return read_recording(ROCM / name).result


def fixture_section(name: str, marker: str, end: str | None = None) -> str:
    """The part of a multi-sample fixture after a '## ...' marker (up to ``end``)."""
    text = (ROCM / name).read_text(encoding="utf-8")
    part = text.split(marker, 1)[1]
    return part.split(end, 1)[0] if end else part


@pytest.fixture
def rocm_fixture():
    return fixture_result
