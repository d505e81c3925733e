"""The adversarial table, run through the real CLI entry (``hipwizard.cli.main``) in-process: one test per
row. Cases that need a real process (closed stdout, a reader that goes away, kill -9, two instances) are
in ``test_processes.py``."""

from __future__ import annotations

import pytest

from . import (
    rows_parity,
    rows_port,
    rows_port_inputs,
    rows_review_safety,
    rows_sweep,
    rows_text_safety,
    rows_train,
    rows_train_safety,
    rows_workspace,
)
from .table import run_case

ROWS = [
    *rows_workspace.ROWS, *rows_parity.ROWS, *rows_train.ROWS, *rows_port.ROWS, *rows_port_inputs.ROWS,
    *rows_review_safety.ROWS, *rows_train_safety.ROWS, *rows_text_safety.ROWS, *rows_sweep.ROWS,
]


def test_row_ids_are_unique_and_enough():
    ids = [r.id for r in ROWS]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 60


@pytest.mark.slow
@pytest.mark.parametrize("case", ROWS, ids=lambda c: c.id)
def test_row(case, tmp_path, capsys, monkeypatch):
    run_case(case, tmp_path, capsys, monkeypatch)
