"""The decision journal: a change is one fsync'd line beside the state file, replayed on load, folded into
the state file on compact / every COMPACT_EVERY changes; torn and already-compacted lines are harmless."""

from __future__ import annotations

import json

import pytest

from hipwizard.errors import UserError
from hipwizard.port.review import journal as review_journal
from hipwizard.port.review.split import split_hunk
from hipwizard.port.review.state import ReviewState
from tests.port.review_factory import new_review


def test_a_decision_appends_one_line_and_leaves_the_state_file_alone(tmp_path):
    state = new_review(tmp_path)
    before = state.path.read_bytes()
    ids = [h.hunk_id for h in state.hunks]
    state.decide([ids[0]], "accepted")
    state.edit(ids[1], ["hipFree(d);  // mine\n"])
    assert state.path.read_bytes() == before
    assert state.journal == tmp_path / "out.review.journal"
    lines = state.journal.read_text().splitlines()
    assert [json.loads(x)["rev"] for x in lines] == [1, 2]
    again = ReviewState.load(state.path)
    assert again.to_json() == state.to_json()
    again.compact()
    assert not again.journal.exists()
    assert json.loads(again.path.read_text())["decisions"][ids[0]] == {"state": "accepted"}
    assert ReviewState.load(state.path).to_json() == state.to_json()


def test_splits_and_undo_replay_to_the_same_state(tmp_path):
    state = new_review(tmp_path)
    splittable = next(h for h in state.hunks if len(split_hunk(h)) > 1)
    state.decide([splittable.hunk_id], "rejected")
    children = state.split(splittable.hunk_id)
    state.decide([children[0].hunk_id], "accepted")
    state.decide([h.hunk_id for h in state.hunks], "accepted", only_pending=True)
    state.undo()
    state.undo()
    again = ReviewState.load(state.path)
    assert again.to_json() == state.to_json()
    assert again.decision(children[0].hunk_id).state == "rejected" and again.history == state.history
    again.undo()  # the split, undone after the reload
    assert splittable.hunk_id in again.index_of and again.decision(splittable.hunk_id).state == "rejected"


def test_the_state_file_is_rewritten_every_compact_every_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(review_journal, "COMPACT_EVERY", 3)
    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    for n in range(4):
        state.decide([ids[n]], "accepted")
    assert json.loads(state.path.read_text())["revision"] == 3  # the third change compacted
    assert [json.loads(x)["rev"] for x in state.journal.read_text().splitlines()] == [4]
    assert ReviewState.load(state.path).to_json() == state.to_json()


def test_a_torn_last_line_is_ignored_and_the_next_change_starts_a_new_line(tmp_path):
    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    state.decide([ids[0]], "accepted")
    with open(state.journal, "ab") as fh:  # kill -9 in the middle of writing the second change
        fh.write(b'{"rev":2,"op":"decide","ids":["')
    resumed = ReviewState.load(state.path)
    assert resumed.revision == 1 and resumed.decision(ids[0]).state == "accepted"
    resumed.decide([ids[1]], "rejected")
    again = ReviewState.load(state.path)
    assert [again.decision(i).state for i in ids[:2]] == ["accepted", "rejected"] and again.revision == 2


def test_lines_already_in_the_state_file_are_skipped(tmp_path):
    # A crash after the compacted state file was renamed into place but before the journal was removed.
    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    state.decide([ids[0]], "accepted")
    state.decide([ids[0]], "rejected")
    journal = state.journal.read_bytes()
    state.compact()
    state.journal.write_bytes(journal)
    again = ReviewState.load(state.path)
    assert again.revision == 2 and again.decision(ids[0]).state == "rejected" and len(again.history) == 2


def test_a_journal_with_a_gap_is_refused_and_kept(tmp_path):
    state = new_review(tmp_path)
    state.decide([state.hunks[0].hunk_id], "accepted")
    bad = '{"rev":5,"op":"undo"}\n'
    state.journal.write_text(bad)
    with pytest.raises(UserError, match="journal .* damaged"):
        ReviewState.load(state.path)
    assert state.journal.read_text() == bad


def test_counts_kept_up_to_date_per_decision_match_a_full_count(tmp_path):
    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    state.counts()  # primed: later decisions adjust it instead of counting every hunk again
    state.decide(ids[:3], "accepted")
    state.decide([ids[1]], "rejected")
    state.edit(ids[2], ["x\n"])
    state.decide(ids, "rejected", only_pending=True)
    state.undo()
    for _ in range(2):
        assert state.counts() == state.counts(range(len(state.hunks)))
        state.decide([ids[0]], "pending")


def test_an_unreadable_journal_line_is_reported_once_with_its_line_number(tmp_path, capsys):
    from hipwizard.cli import main

    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    state.decide([ids[0]], "accepted")
    with open(state.journal, "ab") as fh:  # a damaged line between two good changes
        fh.write(b'{"rev":2,"op":"decide","ids":[\x00garbage\n')
    state = ReviewState.load(state.path)  # a torn line on disk (a crash), then the review reopened
    state.decide([ids[1]], "rejected")  # written as revision 2 (the damaged line is skipped)
    again = ReviewState.load(state.path)
    assert again.journal_unreadable == [2]
    assert [again.decision(i).state for i in ids[:2]] == ["accepted", "rejected"]
    assert main(["review", str(state.path), "--summary", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["journal_unreadable"]
    assert report["count"] == 1 and report["lines"] == [2] and "line 2" in report["warning"]
    assert main(["review", str(state.path), "--summary"]) == 0
    text = capsys.readouterr().out
    assert text.count("could not be read") == 1 and "(line 2)" in text
    # Folding the journal in keeps its raw bytes aside (nothing deleted), and the next load is clean.
    raw = state.journal.read_bytes()
    again.compact()
    assert not again.journal.exists() and again.journal_kept.read_bytes() == raw
    assert "kept as out.review.journal.unreadable-r2" in again.journal_warning()
    clean = ReviewState.load(state.path)
    assert clean.journal_unreadable == [] and clean.journal_warning() == ""
    assert [clean.decision(i).state for i in ids[:2]] == ["accepted", "rejected"]


def test_a_torn_line_that_leaves_a_gap_is_named_in_the_refusal(tmp_path):
    state = new_review(tmp_path)
    state.decide([state.hunks[0].hunk_id], "accepted")
    state.decide([state.hunks[1].hunk_id], "accepted")
    lines = state.journal.read_bytes().split(b"\n")
    lines[0] = lines[0][:-5]  # revision 1 damaged on disk: revision 2 cannot follow it
    state.journal.write_bytes(b"\n".join(lines))
    with pytest.raises(UserError, match=r"1 line of the decision journal .* \(line 1\)"):
        ReviewState.load(state.path)
    assert state.journal.read_bytes() == b"\n".join(lines)
