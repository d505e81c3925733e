"""``WorkTree.place`` with the real `git merge-file`, and writes killed at each step between its file writes."""

from __future__ import annotations

import pytest

from hipwizard.port.output.worktree import WorkTree, record_dir

A = b"line 1\nline 2\nline 3\n\nline 5\nline 6\nline 7\n"


class Killed(BaseException):
    pass


def test_unedited_files_are_rewritten_and_edits_merged(tmp_path):
    tree, target = WorkTree(tmp_path / "out"), tmp_path / "out" / "a.cu"
    assert tree.place("a.cu", target, A).status == "written"
    target.write_bytes(A.replace(b"line 7", b"line 7 mine"))
    placed = tree.place("a.cu", target, A.replace(b"line 1", b"line 1 new"))
    assert placed.status == "merged"
    assert target.read_bytes() == A.replace(b"line 7", b"line 7 mine").replace(b"line 1", b"line 1 new")
    assert (record_dir(tree.out) / "base" / "a.cu").read_bytes() == A.replace(b"line 1", b"line 1 new")


def test_a_conflict_keeps_the_users_bytes_exactly(tmp_path):
    tree, target = WorkTree(tmp_path / "out"), tmp_path / "out" / "a.cu"
    tree.place("a.cu", target, A)
    mine = A.replace(b"line 2", b"line 2 \xff mine")  # not UTF-8: merged as bytes, never decoded
    target.write_bytes(mine)
    placed = tree.place("a.cu", target, A.replace(b"line 2", b"line 2 new"))
    assert placed.status == "conflict" and placed.conflicts == 1
    assert target.read_bytes() == mine
    assert b"line 2 \xff mine" in (record_dir(tree.out) / "merged" / "a.cu").read_bytes()


@pytest.mark.parametrize("edited", [False, True])
@pytest.mark.parametrize("step", range(3))
def test_a_write_killed_at_any_file_write_is_settled_by_the_next(tmp_path, monkeypatch, step, edited):
    """Kill (an exception nothing catches) at the n-th file write inside a write of new content (a plain write:
    next copy, target; a merge with the user's edit: next copy, landing copy, target). The next write of other
    content finds no false "user edit": it writes exactly that content, or merges it with the user's real edit."""
    import hipwizard.port.output.worktree as wt

    tree, target = WorkTree(tmp_path / "out"), tmp_path / "out" / "a.cu"
    tree.place("a.cu", target, A)
    tree.save()
    if edited:
        target.write_bytes(A.replace(b"line 7", b"line 7 mine"))
    real = wt.atomic_write_bytes
    calls = []

    def dying(path, data, *a, **k):
        calls.append(path)
        if len(calls) > step:
            raise Killed
        return real(path, data, *a, **k)

    monkeypatch.setattr(wt, "atomic_write_bytes", dying)
    if step < (3 if edited else 2):
        with pytest.raises(Killed):
            tree.place("a.cu", target, A.replace(b"line 1", b"line 1 B"))
    monkeypatch.setattr(wt, "atomic_write_bytes", real)
    C = A.replace(b"line 3", b"line 3 C")
    placed = WorkTree.load(tmp_path / "out").place("a.cu", target, C)  # the manifest as the kill left it
    assert placed.status == ("merged" if edited else "written"), placed
    assert target.read_bytes() == (C.replace(b"line 7", b"line 7 mine") if edited else C)


def test_promote_killed_after_the_target_was_written(tmp_path, monkeypatch):
    tree, target = WorkTree(tmp_path / "out"), tmp_path / "out" / "a.cu"
    tree.place("a.cu", target, A)
    tree.save()
    B = A.replace(b"line 1", b"line 1 B")

    def killed(self, rel):
        raise Killed

    monkeypatch.setattr(WorkTree, "_promote", killed)
    with pytest.raises(Killed):
        tree.place("a.cu", target, B)
    monkeypatch.undo()
    assert target.read_bytes() == B  # written, but not recorded as the base yet
    placed = WorkTree.load(tmp_path / "out").place("a.cu", target, A)  # back to A: not a user edit
    assert placed.status == "written" and target.read_bytes() == A
