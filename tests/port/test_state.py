"""port/state.py, the sole owner of .hipwizard/port.json: the typed link, locate, the one-line status."""

from __future__ import annotations

import pytest

from hipwizard.errors import UserError
from hipwizard.port import state
from hipwizard.workspace import Workspace
from tests.port.review_factory import new_review


def test_link_round_trips_and_relative_paths_are_taken_from_the_workspace(tmp_path):
    ws = Workspace(tmp_path)
    assert state.read_link(ws) == state.PortLink()
    state.record_link(ws, "cuda", "hip")
    link = state.read_link(ws)
    assert (link.src, link.out, link.error) == (tmp_path / "cuda", tmp_path / "hip", "")
    assert state.review_path(ws) == tmp_path / "hip.review.json"
    assert not state.link_unless_set(ws, "other", "else")  # a readable link is never replaced
    assert state.read_link(ws).src == tmp_path / "cuda"


def test_a_copied_workspace_links_to_its_own_copies(tmp_path):
    import shutil

    ws = Workspace(tmp_path / "a")
    (tmp_path / "a").mkdir()
    outside = tmp_path / "elsewhere"
    state.record_link(ws, tmp_path / "a" / "cuda", outside)  # absolute in, inside the workspace stored relative
    raw = ws.read_state("port")
    assert raw["src"] == "cuda" and raw["out"] == str(outside.resolve())  # outside it: kept absolute
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert state.read_link(Workspace(tmp_path / "b")).src == tmp_path / "b" / "cuda"


def test_a_damaged_port_json_is_reported_and_may_be_replaced(tmp_path):
    ws = Workspace(tmp_path)
    ws.state_path("port").parent.mkdir(parents=True)
    ws.state_path("port").write_text("{not json")
    assert state.read_link(ws).error and state.review_path(ws) is None
    assert state.link_unless_set(ws, tmp_path / "a", tmp_path / "b")
    assert state.read_link(ws).out == tmp_path / "b"


def test_locate_from_a_workspace_an_output_folder_or_the_file(tmp_path):
    review = new_review(tmp_path)
    review.save()
    ws = Workspace(tmp_path)
    state.record_link(ws, review.src, review.out)
    assert state.locate(tmp_path) == review.path
    assert state.locate(review.out) == review.path
    assert state.locate(review.path) == review.path
    with pytest.raises(UserError, match="does not exist"):
        state.locate(tmp_path / "nowhere")
    assert state.review_workspace(tmp_path, review.path).root == tmp_path


def test_summarize_follows_the_migration(tmp_path):
    ws = Workspace(tmp_path)
    assert state.summarize(ws).state == "not started"
    state.record_link(ws, tmp_path / "cuda", tmp_path / "out")
    assert state.summarize(ws).state == "in progress" and "not translated yet" in state.summarize(ws).summary
    review = new_review(tmp_path)
    review.save()
    state.record_link(ws, review.src, review.out)
    assert "hunks decided" in state.summarize(ws).summary
