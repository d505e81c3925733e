"""Fixtures of the parity tests."""

from __future__ import annotations

import pytest

from tests.parity.parity_captures import write_capture


@pytest.fixture
def capture_factory(tmp_path):
    def make(name: str, outputs, **kw):
        return write_capture(tmp_path / name, outputs, **kw)
    return make
