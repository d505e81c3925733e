"""The review model on its own: ``apply(op)`` changes memory only, replays to the same model, refuses ops
that do not fit; the memo's counts follow each change; the store commits or puts the model back."""

from __future__ import annotations

import random

import pytest

from hipwizard.port.review.model import ReviewModel
from hipwizard.port.review.state import ReviewState
from hipwizard.port.review.store import ReviewStore
from tests.port.review_factory import new_review


def _fresh_model(state: ReviewState) -> ReviewModel:
    """A model with the state's hunks, all pending, no file behind it."""
    return ReviewModel(state.src, state.out, files=dict(state.files), hunks=list(state.hunks),
                       decisions={h.hunk_id: state.decision(h.hunk_id) for h in state.hunks})


def _random_ops(model: ReviewModel, rng: random.Random, n: int) -> list[dict]:
    """Apply ``n`` random ops to ``model`` (each one that fits it) and return them."""
    ops = []
    for _ in range(n):
        ids = [h.hunk_id for h in model.hunks]
        kind = rng.choice(["decide", "decide", "edit", "split", "undo"])
        if kind == "decide":
            op = {"op": "decide", "ids": rng.sample(ids, rng.randint(1, min(3, len(ids)))),
                  "state": rng.choice(["accepted", "rejected", "pending"])}
        elif kind == "edit":
            op = {"op": "edit", "id": rng.choice(ids), "lines": [f"// edit {rng.random()}\n"]}
        elif kind == "split":
            op = {"op": "split", "id": rng.choice(ids)}
        else:
            if not model.history:
                continue
            op = {"op": "undo"}
        model.apply(op)
        ops.append(op)
    return ops


def test_apply_changes_memory_only_and_replays_to_the_same_model(tmp_path):
    state = new_review(tmp_path)
    state.save()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    model = _fresh_model(state)
    ops = _random_ops(model, random.Random(7), 60)
    assert model.revision == len(ops) and sum(d.state != "pending" for d in model.decisions.values()) > 0
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing read or written on disk

    again = _fresh_model(state)
    for op in ops:
        again.apply(op)
    assert [h.to_dict() for h in again.hunks] == [h.to_dict() for h in model.hunks]
    assert {k: v.to_dict() for k, v in again.decisions.items()} == {k: v.to_dict() for k, v in model.decisions.items()}
    assert again.history == model.history and again.splits == model.splits


def test_the_journal_replays_the_ops_committed_through_the_store(tmp_path):
    state = new_review(tmp_path)
    state.save()
    mirror = _fresh_model(state)
    rng = random.Random(11)
    for _ in range(40):
        ids = [h.hunk_id for h in state.hunks]
        hid = rng.choice(ids)
        if rng.random() < 0.2 and state.history:
            state.undo()
            mirror.apply({"op": "undo"})
        elif rng.random() < 0.2:
            if state.split(hid):
                mirror.apply({"op": "split", "id": hid})
        else:
            choice = rng.choice(["accepted", "rejected"])
            if state.decide([hid], choice):
                mirror.apply({"op": "decide", "ids": [hid], "state": choice})
    loaded = ReviewState.load(state.path)
    assert loaded.revision == mirror.revision == state.revision
    assert {k: v.to_dict() for k, v in loaded.decisions.items()} == {k: v.to_dict() for k, v in mirror.decisions.items()}
    assert [h.hunk_id for h in loaded.hunks] == [h.hunk_id for h in mirror.hunks]


def test_an_op_that_does_not_fit_raises_and_changes_nothing(tmp_path):
    model = _fresh_model(new_review(tmp_path))
    first = model.hunks[0].hunk_id
    with pytest.raises(KeyError):
        model.apply({"op": "decide", "ids": [first, "no-such-hunk"], "state": "accepted"})
    assert model.decision(first).state == "pending" and model.revision == 0 and not model.history
    with pytest.raises(ValueError):
        model.apply({"op": "rename"})


def test_memo_counts_follow_every_change_like_a_full_recount(tmp_path):
    model = _fresh_model(new_review(tmp_path))
    rng = random.Random(3)
    for _ in range(50):
        _random_ops(model, rng, 1)
        remembered = model.counts()
        assert remembered == model.counts(range(len(model.hunks)))  # the uncached count over every hunk


def test_a_commit_that_cannot_be_saved_puts_the_model_back(tmp_path):
    state = new_review(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    store = ReviewStore(blocker / "out.review.json")
    revision, hid = state.revision, state.hunks[0].hunk_id
    state.counts()
    with pytest.raises(OSError):
        store.commit(state, {"op": "decide", "ids": [hid], "state": "accepted"})
    assert state.decision(hid).state == "pending" and state.revision == revision
    assert state.counts().accepted == 0
