"""ReviewState: decisions, edits, splits and undo are saved at once; reload, reconcile, bad files."""

from __future__ import annotations

import json

import pytest

from hipwizard.errors import UserError
from hipwizard.port.model import Hunk
from hipwizard.port.review.split import can_split, split_hunk
from hipwizard.port.review.state import REVIEW_VERSION, ReviewState, state_path_for
from tests.port.review_factory import KERNEL, hipify_like, new_review, translation


def test_state_file_sits_beside_output_and_is_versioned_json(tmp_path):
    state = new_review(tmp_path)
    assert state.path == state_path_for(tmp_path / "out") == tmp_path / "out.review.json"
    data = json.loads(state.path.read_text())
    assert data["version"] == REVIEW_VERSION and data["kind"] == "hipwizard-review"
    assert len(data["hunks"]) == len(state.hunks) > 4
    assert data["decisions"].values() and all(d == {"state": "pending"} for d in data["decisions"].values())
    # one decision per line: a team can diff and merge it
    lines = state.path.read_text().splitlines()
    assert sum('"state": "pending"' in line for line in lines) == len(state.hunks)


def test_every_change_is_on_disk_before_the_call_returns(tmp_path):
    state = new_review(tmp_path)
    ids = [h.hunk_id for h in state.hunks]
    state.decide([ids[0]], "accepted")
    assert ReviewState.load(state.path).decision(ids[0]).state == "accepted"
    state.decide([ids[1]], "rejected")
    state.edit(ids[2], ["hipFree(d);  // mine"])
    again = ReviewState.load(state.path)
    assert [again.decision(i).state for i in ids[:4]] == ["accepted", "rejected", "edited", "pending"]
    assert again.decision(ids[2]).lines == ["hipFree(d);  // mine"]
    assert again.revision == state.revision == 3


def test_undo_restores_batches_and_survives_reload(tmp_path):
    state = new_review(tmp_path)
    file_ids = [state.hunks[i].hunk_id for i in state.by_file["main.cu"]]
    state.decide([file_ids[0]], "rejected")
    changed = state.decide(file_ids, "accepted", only_pending=True)
    assert changed == file_ids[1:]
    reloaded = ReviewState.load(state.path)
    assert reloaded.undo() == list(reversed(file_ids[1:]))
    assert [reloaded.decision(i).state for i in file_ids] == ["rejected"] + ["pending"] * (len(file_ids) - 1)
    assert reloaded.undo() == [file_ids[0]]
    assert reloaded.undo() is None
    assert ReviewState.load(state.path).counts().pending == len(state.hunks)


def test_first_pending_and_counts(tmp_path):
    state = new_review(tmp_path)
    assert state.first_pending() == 0
    state.decide([h.hunk_id for h in state.hunks[:3]], "accepted")
    assert state.first_pending() == 3
    c = state.counts()
    assert (c.accepted, c.pending, c.total, c.decided) == (3, len(state.hunks) - 3, len(state.hunks), 3)
    assert c.high_pending == sum(1 for h in state.hunks[3:] if h.max_severity == "high")


def test_split_line_by_line_and_undo_split(tmp_path):
    orig = "a\nb\nc\nd\n"
    trans = "A\nB\nC\nd\n"
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.cu").write_text(orig)
    state = ReviewState.create(src, tmp_path / "out", [translation("f.cu", orig, trans)])
    (parent,) = state.hunks
    assert can_split(parent)
    state.decide([parent.hunk_id], "accepted")
    children = state.split(parent.hunk_id)
    assert [c.hunk_id for c in children] == [f"{parent.hunk_id}.{n}" for n in (1, 2, 3)]
    assert [(c.old_start, c.old_lines, c.new_lines) for c in children] == [
        (1, ["a\n"], ["A\n"]), (2, ["b\n"], ["B\n"]), (3, ["c\n"], ["C\n"])]
    assert children[1].context_before == ["a\n"]
    assert children and all(state.decision(c.hunk_id).state == "accepted" for c in children)
    state.decide([children[1].hunk_id], "rejected")
    reloaded = ReviewState.load(state.path)
    assert [h.hunk_id for h in reloaded.hunks] == [c.hunk_id for c in children]
    reloaded.undo()  # the reject
    reloaded.undo()  # the split
    assert [h.hunk_id for h in reloaded.hunks] == [parent.hunk_id]
    assert reloaded.decision(parent.hunk_id).state == "accepted"


def test_split_on_unchanged_lines_inside_a_hunk():
    h = Hunk("f.cu", 10, ["x1", "same", "x2"], 10, ["y1", "same", "y2", "y3"], ["c"], ["d"])
    a, b = split_hunk(h)
    assert (a.old_start, a.old_lines, a.new_lines) == (10, ["x1"], ["y1"])
    assert (b.old_start, b.old_lines, b.new_lines, b.context_before) == (12, ["x2"], ["y2", "y3"], ["c", "x1", "same"])
    single = Hunk("f.cu", 1, ["a", "b"], 1, ["c"])
    assert not can_split(single) and split_hunk(single) == [single]


def test_reconcile_keeps_matching_decisions_and_marks_changed(tmp_path):
    state = new_review(tmp_path, {"k.cu": KERNEL})
    ids = [h.hunk_id for h in state.hunks]
    state.decide(ids, "accepted")
    assert state.changed_sources() == []
    # the user edits the tail of the source: the first hunks keep their text, the free() hunk changes
    edited = KERNEL.replace("  cudaFree(d);\n", "  cudaFree(d);  // release\n")
    (state.src / "k.cu").write_text(edited)
    assert state.changed_sources() == ["k.cu"]
    report = state.reconcile([translation("k.cu", edited, hipify_like(edited))])
    assert report.changed_files == ["k.cu"] and report.changed >= 1 and report.kept >= 1
    states = {h.hunk_id: state.decision(h.hunk_id) for h in state.hunks}
    assert sum(d.state == "accepted" for d in states.values()) == report.kept
    changed = [h for h in state.hunks if states[h.hunk_id].changed]
    assert any("hipFree(d);  // release" in line for h in changed for line in h.new_lines)
    assert changed and all(states[h.hunk_id].state == "pending" for h in changed)
    assert state.changed_sources() == []
    # deciding a changed hunk clears the mark
    state.decide([changed[0].hunk_id], "accepted")
    assert not ReviewState.load(state.path).decision(changed[0].hunk_id).changed


def test_reconcile_redoes_a_known_split(tmp_path):
    state = new_review(tmp_path, {"k.cu": KERNEL})
    splittable = next(h for h in state.hunks if can_split(h))
    children = state.split(splittable.hunk_id)
    state.decide([children[0].hunk_id], "rejected")
    state.reconcile([translation("k.cu", KERNEL, hipify_like(KERNEL))])
    assert state.decision(children[0].hunk_id).state == "rejected"
    assert splittable.hunk_id not in state.index_of


@pytest.mark.parametrize("content, words", [
    ("{not json", "unreadable"),
    ('{"kind": "hipwizard-review", "version": 99}', "newer"),
    ('{"kind": "something-else", "version": 1}', "not a hipwizard review"),
    ('{"kind": "hipwizard-review", "version": 1, "src": "s"}', "damaged"),
])
def test_bad_state_files_give_one_clear_line_and_are_kept(tmp_path, content, words):
    path = tmp_path / "out.review.json"
    path.write_text(content)
    with pytest.raises(UserError, match=words):
        ReviewState.load(path)
    assert path.read_text() == content


def test_missing_state_file_says_how_to_make_one(tmp_path):
    with pytest.raises(UserError, match="hipwizard hipify"):
        ReviewState.load(tmp_path / "nope.review.json")


def test_failed_save_raises_and_leaves_memory_as_on_disk(tmp_path):
    state = new_review(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    state.path = blocker / "out.review.json"  # cannot be created: its parent is a file
    first = state.hunks[0]
    with pytest.raises(OSError):
        state.decide([first.hunk_id], "accepted")
    assert state.decision(first.hunk_id).state == "pending" and state.history == [] and state.revision == 0
    splittable = next(h for h in state.hunks if len(split_hunk(h)) > 1)
    with pytest.raises(OSError):
        state.split(splittable.hunk_id)
    assert splittable.hunk_id in state.index_of and state.splits == {}
