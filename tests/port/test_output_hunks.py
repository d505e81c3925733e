"""The output folder's own hunks: each conflict region decided on its own (mine / new, the file written once
all are decided, a decision kept when a later write meets the same region), and the user's edits listed
as hunks — with the real `git merge-file`, and through the real CLI."""

from __future__ import annotations

import json

from hipwizard.cli import main
from hipwizard.port.output.worktree import WorkTree, record_dir
from hipwizard.port.output.worktree_hunks import compose, conflict_hunks
from tests.port.test_iterative_port import decide, decisions, hipify, make_conflict, proj, write  # noqa: F401 (proj: a fixture)

BASE = "".join(f"line {i}\n" for i in range(1, 15)).encode()


def _two_conflicts(tmp_path):
    tree, target = WorkTree(tmp_path / "out"), tmp_path / "out" / "a.cu"
    tree.place("a.cu", target, BASE)
    mine = BASE.replace(b"line 2\n", b"line 2 mine\n").replace(b"line 12\n", b"line 12 mine\n")
    target.write_bytes(mine)
    new = BASE.replace(b"line 2\n", b"line 2 new\n").replace(b"line 12\n", b"line 12 new\n")
    placed = tree.place("a.cu", target, new)
    tree.save()
    assert placed.status == "conflict" and placed.conflicts == 2
    return tree, target, mine, new


def test_each_conflict_is_a_hunk_and_the_file_is_written_once_all_are_decided(tmp_path):
    tree, target, mine, new = _two_conflicts(tmp_path)
    hunks = [h for h in tree.output_hunks() if h.kind == "conflict"]
    assert [(h.ref, h.old, h.new, h.choice) for h in hunks] == [
        ("a.cu#1", ["line 2 mine\n"], ["line 2 new\n"], ""), ("a.cu#2", ["line 12 mine\n"], ["line 12 new\n"], "")]
    assert tree.choose("a.cu", 1, "mine", target) is False
    assert target.read_bytes() == mine  # untouched until every conflict is decided
    again = WorkTree.load(tree.out)  # the decision is on disk
    assert [h.choice for h in again.output_hunks() if h.kind == "conflict"] == ["mine", ""]
    assert again.choose("a.cu", 2, "new", target) is True
    assert target.read_bytes() == BASE.replace(b"line 2\n", b"line 2 mine\n").replace(b"line 12\n", b"line 12 new\n")
    assert not again.conflicts and (record_dir(tree.out) / "base" / "a.cu").read_bytes() == new
    # what the user kept is now their edit: listed as such, and the next write of the same result keeps it
    assert [(h.kind, h.ref, h.old, h.new) for h in again.output_hunks()] == [
        ("yours", "a.cu#1", ["line 2 new\n"], ["line 2 mine\n"])]
    assert again.place("a.cu", target, new).status == "kept"
    assert b"line 2 mine" in target.read_bytes()


def test_a_decision_survives_a_rewrite_that_meets_the_same_conflict(tmp_path):
    tree, target, _mine, new = _two_conflicts(tmp_path)
    tree.choose("a.cu", 2, "new", target)
    tree = WorkTree.load(tree.out)
    assert tree.place("a.cu", target, new).status == "conflict"  # written again before deciding the rest
    tree.save()
    assert [h.choice for h in WorkTree.load(tree.out).output_hunks()] == ["", "new"]
    # a new result that changes the region brings it back undecided
    other = new.replace(b"line 12 new", b"line 12 newer")
    assert tree.place("a.cu", target, other).status == "conflict"
    assert [h.choice for h in tree.output_hunks()] == ["", ""]


def test_compose_keeps_text_outside_the_regions_and_waits_for_every_choice():
    merged = "a\n<<<<<<< yours\nb mine\n=======\nb new\n>>>>>>> new result\nc\n"
    [h] = conflict_hunks("f.cu", merged, {})
    assert compose(merged, {}) is None
    assert compose(merged, {h.key: "new"}) == "a\nb new\nc\n"
    assert compose(merged, {h.key: "mine"}) == "a\nb mine\nc\n"
    assert conflict_hunks("f.cu", "<<<<<<< yours\nunterminated\n", {}) == []


def test_cli_lists_conflicts_as_hunks_and_decides_one(proj, capsys):  # noqa: F811 (proj: the imported fixture)
    rc, _, mine = make_conflict(proj, capsys)
    assert rc == 1
    target = proj / "out" / "k.cu"
    assert main(["review", str(proj / "out"), "--summary"]) == 0
    text = capsys.readouterr().out
    assert "✖ k.cu#1 L" in text and "[undecided] → --resolve k.cu#1=mine|new" in text
    assert main(["review", str(proj / "out"), "--summary", "--json"]) == 0
    [h] = json.loads(capsys.readouterr().out)["output_hunks"]
    assert h["kind"] == "conflict" and any("// mine" in s for s in h["old"]) and any("cudaFree" in s for s in h["new"])
    for bad in ("k.cu#x=mine", "k.cu#2=mine", "k.cu#1=merged"):
        assert main(["review", str(proj / "out"), "--resolve", bad]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert target.read_text() == mine
    assert main(["review", str(proj / "out"), "--resolve", "k.cu#1=mine"]) == 0
    assert "every conflict decided, file written" in capsys.readouterr().out
    assert target.read_text() == mine  # mine chosen: the user's lines, and no markers
    assert main(["review", str(proj / "out"), "--summary", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not data["worktree"]["conflicts"]
    assert [h["kind"] for h in data["output_hunks"]] == ["yours"]  # the kept line is the user's edit now


def test_copy_untouched_merges_your_edit_with_the_sources_change(proj, capsys):  # noqa: F811 (the fixture)
    make = "".join(f"rule{i}: dep{i}\n" for i in range(1, 12))
    (proj / "src" / "Makefile").write_text(make)
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    assert write(proj, capsys, "--copy-untouched")[0] == 0
    target = proj / "out" / "Makefile"
    assert target.read_text() == make
    target.write_text(make.replace("rule1: dep1", "rule1: dep1 HIP_PLATFORM=amd"))  # the user's edit
    (proj / "src" / "Makefile").write_text(make.replace("rule11: dep11", "rule11: dep11 extra"))
    assert write(proj, capsys, "--copy-untouched")[0] == 0
    assert target.read_text() == make.replace("rule1: dep1", "rule1: dep1 HIP_PLATFORM=amd").replace(
        "rule11: dep11", "rule11: dep11 extra")
    # the same line changed on both sides: the user's file is kept and the conflict is listed as a hunk
    target.write_text(target.read_text().replace("extra", "mine"))
    (proj / "src" / "Makefile").write_text(make.replace("rule11: dep11", "rule11: dep11 theirs"))
    write(proj, capsys, "--copy-untouched")
    assert "rule11: dep11 mine" in target.read_text()
    assert main(["review", str(proj / "out"), "--summary", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "Makefile" in data["worktree"]["conflicts"]
    assert [h["ref"] for h in data["output_hunks"] if h["kind"] == "conflict"] == ["Makefile#1"]
