"""train.json through its one owner: typed reads, remembered runs newest first, junk tolerated."""

from __future__ import annotations

import json

import pytest

from hipwizard.train import state
from hipwizard.workspace import Workspace


def test_empty_workspace_has_an_empty_state(tmp_path):
    ws = Workspace(tmp_path / "ws")
    assert state.load(ws) == state.TrainState()
    assert state.launched_run_dirs(ws) == []


def test_remember_run_puts_it_first_once_and_keeps_other_keys(tmp_path):
    ws = Workspace(tmp_path / "ws")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    ws.update_state("train", note="kept")
    state.remember_run(ws, a)
    state.remember_run(ws, b)
    state.remember_run(ws, a)
    saved = state.load(ws)
    assert saved.last_run == str(a) and saved.launched_runs == [str(a), str(b)]
    assert ws.read_state("train")["note"] == "kept"
    assert state.launched_run_dirs(ws) == [a]  # b does not exist (any more)


@pytest.mark.slow
def test_remembered_runs_are_capped(tmp_path):
    ws = Workspace(tmp_path / "ws")
    for n in range(state.KEEP + 5):
        state.remember_run(ws, f"/runs/{n}")
    runs = state.load(ws).launched_runs
    assert len(runs) == state.KEEP and runs[0] == f"/runs/{state.KEEP + 4}"


def test_a_damaged_or_odd_state_reads_as_empty(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.state_dir.mkdir(parents=True)
    ws.state_path("train").write_text(json.dumps({"version": 1, "last_run": 3, "launched_runs": ["/x", None, 5]}))
    assert state.load(ws) == state.TrainState(None, ["/x"])
    ws.state_path("train").write_text("{not json")
    assert state.load(ws) == state.TrainState()
