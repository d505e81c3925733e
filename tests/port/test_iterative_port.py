"""The port as an iterative loop, through the real CLI: decide -> re-run -> same decisions; a source edit
brings only its changed hunks back (the old decision shown); the output folder is the user's working tree
(hand edits merged with the real `git merge-file`, never overwritten; conflicts reported and resolved)."""

from __future__ import annotations

import json
import os

import pytest

from hipwizard.cli import main
from hipwizard.port.review.state import ReviewState, state_path_for

KERNEL = """#include <cuda_runtime.h>

// a kernel
__global__ void k(float* x) { x[0] = 1.0f; }

int main() {
  float* d;
  cudaMalloc(&d, 4);

  // launch
  k<<<1, 1>>>(d);

  // wait
  cudaDeviceSynchronize();

  // done
  cudaFree(d);

  // exit
  return 0;
}
"""
OTHER = "#include <cuda_runtime.h>\nvoid f() { cudaDeviceReset(); }\n"


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(KERNEL)
    (tmp_path / "src" / "other.cu").write_text(OTHER)
    return tmp_path


def hipify(proj, *extra, capsys=None) -> tuple[int, dict]:
    rc = main(["hipify", str(proj / "src"), "--out", str(proj / "out"), "--workspace", str(proj),
               "--backend", "builtin", "--hip-version", "6.1", "--no-check", "--json", *extra])
    out = capsys.readouterr().out if capsys else ""
    return rc, (json.loads(out) if out.strip().startswith("{") else {})


def review(proj) -> ReviewState:
    return ReviewState.load(state_path_for(proj / "out"))


def decisions(proj) -> dict[tuple[str, int], str]:
    r = review(proj)
    return {(h.file, h.old_start): r.decision(h.hunk_id).state for h in r.hunks}


def decide(proj, where: dict[tuple[str, int], str]) -> None:
    r = review(proj)
    for h in r.hunks:
        if (h.file, h.old_start) in where:
            r.decide([h.hunk_id], where[(h.file, h.old_start)])
    r.compact()


def write(proj, capsys, *extra) -> tuple[int, str]:
    rc = main(["review", str(proj / "out"), "--write", "--no-check", *extra])
    return rc, capsys.readouterr().out


# --- decisions survive re-runs ---------------------------------------------------------------------------------
def test_rerun_keeps_every_decision(proj, capsys):
    assert hipify(proj, capsys=capsys)[0] == 0
    decide(proj, {("k.cu", 1): "accepted", ("k.cu", 8): "rejected", ("other.cu", 1): "accepted"})
    before = decisions(proj)
    assert sorted(before.values()).count("pending") == len(before) - 3
    rc, summary = hipify(proj, capsys=capsys)
    assert rc == 0
    assert decisions(proj) == before
    assert summary["reconciled"]["kept"] == 3 and summary["reconciled"]["changed"] == 0
    assert summary["reconciled"]["changed_files"] == [] and summary["changed_since_decided"] == []


def test_a_source_edit_brings_back_only_its_changed_hunks_with_the_old_decision(proj, capsys):
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    decide(proj, {("k.cu", 17): "rejected"})
    (proj / "src" / "k.cu").write_text(KERNEL.replace("cudaFree(d);", "cudaFree(d);  // release"))
    rc, summary = hipify(proj, capsys=capsys)
    assert rc == 0
    assert summary["reconciled"]["changed_files"] == ["k.cu"]
    assert [(c["file"], c["line"], c["was"]) for c in summary["changed_since_decided"]] == [("k.cu", 17, "rejected")]
    now = decisions(proj)
    assert now.pop(("k.cu", 17)) == "pending"
    assert set(now.values()) == {"accepted"}  # every other decision kept
    # the summary (text and JSON) shows the old decision too
    assert main(["review", str(proj / "out"), "--summary"]) == 0
    assert "k.cu:17  changed since you decided (was rejected)" in capsys.readouterr().out
    assert main(["review", str(proj / "out"), "--summary", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed_since_decided"][0]["was"] == "rejected"


def test_decisions_on_vanished_hunks_are_listed_and_come_back(proj, capsys):
    hipify(proj, capsys=capsys)
    decide(proj, {("k.cu", 14): "rejected"})
    (proj / "src" / "k.cu").write_text(KERNEL.replace("  // wait\n  cudaDeviceSynchronize();\n", ""))
    rc, summary = hipify(proj, capsys=capsys)
    assert summary["reconciled"]["vanished_hunks"] == [
        {"file": "k.cu", "old_start": 14, "decision": {"state": "rejected"}}]
    assert main(["review", str(proj / "out"), "--summary"]) == 0
    assert "k.cu:14  decided hunk vanished from the translation (was rejected)" in capsys.readouterr().out
    (proj / "src" / "k.cu").write_text(KERNEL)  # the edit undone: the decision comes back
    hipify(proj, capsys=capsys)
    assert decisions(proj)[("k.cu", 14)] == "rejected" and review(proj).vanished == []


# --- the output folder is a working tree ------------------------------------------------------------------------
def test_hand_edit_is_kept_across_writes_and_merged_with_new_results(proj, capsys):
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    assert write(proj, capsys)[0] == 0
    target = proj / "out" / "k.cu"
    target.write_text(target.read_text().replace("return 0;", "return 42;  // mine"))
    rc, text = write(proj, capsys)  # nothing new: the edit stays
    assert rc == 0 and "return 42;  // mine" in target.read_text() and "your edits kept" in text
    decide(proj, {("k.cu", 1): "rejected"})  # a new result in the same file, away from the edit
    rc, text = write(proj, capsys)
    assert rc == 0, text
    now = target.read_text()
    assert "return 42;  // mine" in now and "#include <cuda_runtime.h>" in now and "hipFree(d);" in now
    assert "merged" in text
    assert main(["review", str(proj / "out"), "--summary"]) == 0
    assert "your edits in 1 written file(s)" in capsys.readouterr().out


def make_conflict(proj, capsys) -> tuple[int, str, str]:
    """Write everything, hand-edit the output's hipFree line, then reject that hunk (the new result changes
    the very line the user edited) and write again. Returns (exit code, output, the user's text)."""
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    write(proj, capsys)
    target = proj / "out" / "k.cu"
    mine = target.read_text().replace("hipFree(d);", "hipFree(d);  // mine")
    target.write_text(mine)
    decide(proj, {("k.cu", 17): "rejected"})
    rc, text = write(proj, capsys)
    return rc, text, mine


def test_conflicting_edit_is_reported_and_the_users_file_is_untouched(proj, capsys):
    rc, text, mine = make_conflict(proj, capsys)
    target = proj / "out" / "k.cu"
    assert rc == 1
    assert [line for line in text.splitlines() if line.startswith("conflict:")] == [
        next(line for line in text.splitlines() if line.startswith("conflict: k.cu: 1 conflict(s)"))]
    assert target.read_text() == mine
    assert (proj / "out" / "other.cu").read_text().count("hipDeviceReset") == 1  # the other file is written
    assert main(["review", str(proj / "out"), "--summary", "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)["worktree"]["conflicts"]) == ["k.cu"]
    # the user decides: the merged text with conflict markers
    assert main(["review", str(proj / "out"), "--resolve", "k.cu=merged"]) == 0
    merged = target.read_text()
    assert "<<<<<<< yours" in merged and "hipFree(d);  // mine" in merged and "cudaFree(d);" in merged
    capsys.readouterr()
    assert main(["review", str(proj / "out"), "--resolve", "k.cu=new"]) == 2  # no longer in conflict
    assert "not in conflict" in capsys.readouterr().err


@pytest.mark.parametrize("choice, expect", [("mine", "hipFree(d);  // mine"), ("new", "  cudaFree(d);\n")])
def test_resolving_a_conflict_keeps_mine_or_takes_new(proj, capsys, choice, expect):
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    write(proj, capsys)
    target = proj / "out" / "k.cu"
    target.write_text(target.read_text().replace("hipFree(d);", "hipFree(d);  // mine"))
    decide(proj, {("k.cu", 17): "rejected"})
    assert write(proj, capsys)[0] == 1
    assert main(["review", str(proj / "out"), "--resolve", f"k.cu={choice}"]) == 0
    assert expect in target.read_text()
    rc, _ = write(proj, capsys)  # settled: the next write has nothing to fight about
    assert rc == 0 and expect in target.read_text()


def test_without_git_an_edited_file_is_never_overwritten(proj, capsys, monkeypatch):
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    write(proj, capsys)
    target = proj / "out" / "k.cu"
    target.write_text(target.read_text().replace("return 0;", "return 7;"))
    decide(proj, {("k.cu", 1): "rejected"})
    empty = proj / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # the real runner finds no git
    rc, text = write(proj, capsys)
    assert rc == 1 and "git is not installed" in text
    assert "return 7;" in target.read_text() and "hip/hip_runtime.h" in target.read_text()


def test_rerun_after_a_write_keeps_decisions_and_hand_edits(proj, capsys):
    rc, _ = hipify(proj, "--accept-unflagged", capsys=capsys)
    assert rc == 0
    decide(proj, {("k.cu", 8): "rejected"})
    target = proj / "out" / "k.cu"
    write(proj, capsys)
    target.write_text(target.read_text().replace("// exit", "// exit, by hand"))
    before = decisions(proj)
    rc, summary = hipify(proj, "--accept-unflagged", capsys=capsys)
    assert rc == 0, summary
    assert decisions(proj) == before and before[("k.cu", 8)] == "rejected"
    assert "// exit, by hand" in target.read_text() and "  cudaMalloc(&d, 4);" in target.read_text()


def test_accept_into_a_folder_hipwizard_did_not_create_needs_force(proj, capsys):
    (proj / "out").mkdir()
    (proj / "out" / "k.cu").write_text("// the team's own HIP port\n")
    rc = main(["hipify", str(proj / "src"), "--out", str(proj / "out"), "--workspace", str(proj),
               "--backend", "builtin", "--accept-all", "--no-check"])
    assert rc == 2 and "did not write" in capsys.readouterr().err
    assert (proj / "out" / "k.cu").read_text() == "// the team's own HIP port\n"
    assert not state_path_for(proj / "out").exists()
    rc, summary = hipify(proj, "--accept-all", "--force", capsys=capsys)
    assert rc == 0 and "hipMalloc" in (proj / "out" / "k.cu").read_text()


def test_a_killed_writes_leftover_temp_file_is_removed_by_the_next_write(proj, capsys):
    hipify(proj, "--accept-all", capsys=capsys)
    leftover = proj / "out" / ".k.cu.a1b2c3d4.tmp"
    leftover.write_bytes(b"")
    users = proj / "out" / ".notes.tmp"
    users.write_text("mine")
    assert write(proj, capsys)[0] == 0
    assert not leftover.exists() and users.read_text() == "mine"


def test_temp_files_a_killed_write_left_in_the_record_go_even_when_nothing_is_rewritten(proj, capsys):
    """A write killed between its new base and its target leaves next/.k.cu.XXXXXXXX.tmp; the next write finds
    k.cu already right, rewrites nothing, and must still clear hipwizard's own folder (seen in CI)."""
    hipify(proj, "--accept-all", capsys=capsys)
    record = proj / "out.written"
    left = [record / "next" / ".k.cu.sqd221j5.tmp", record / "base" / ".k.cu.0a1b2c3d.tmp",
            record / "landing" / "sub" / ".k.cu.zz99yy88.tmp"]
    for p in left:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    before = (proj / "out" / "k.cu").read_bytes()
    rc, text = write(proj, capsys)
    assert rc == 0 and "conflict" not in text
    assert [p for p in left if p.exists()] == [] and (proj / "out" / "k.cu").read_bytes() == before


# --- bad input: one line, exit 2, nothing written -----------------------------------------------------------------
def _tree(proj) -> set:
    return {p.relative_to(proj).as_posix() for p in proj.rglob("*")}


@pytest.mark.parametrize("out, words", [("src/hip", "inside the source folder"),
                                        ("notes.txt/hip", "cannot be made"),
                                        ("/proc/hipwizard-out", "cannot be written")])
def test_bad_output_folders_are_one_line_exit_2_nothing_written(proj, capsys, out, words):
    (proj / "notes.txt").write_text("a regular file")
    before = _tree(proj)
    target = out if out.startswith("/") else str(proj / out)
    rc = main(["hipify", str(proj / "src"), "--out", target, "--workspace", str(proj), "--backend", "builtin"])
    err = capsys.readouterr().err
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1
    assert _tree(proj) == before


@pytest.mark.parametrize("rel", ["../evil.cu", "/tmp/hipwizard-evil.cu"])
def test_a_crafted_state_with_escaping_paths_refuses_the_whole_write(proj, capsys, rel):
    hipify(proj, capsys=capsys)
    decide(proj, {key: "accepted" for key in decisions(proj)})
    path = state_path_for(proj / "out")
    data = json.loads(path.read_text())
    data["files"][rel] = {"sha256": "0" * 64, "hunks": 0}
    path.write_text(json.dumps(data))
    before = _tree(proj)
    rc = main(["review", str(proj / "out"), "--write", "--no-check"])
    err = capsys.readouterr().err
    assert rc == 2 and str(path) in err and "would leave" in err and len(err.strip().splitlines()) == 1
    assert _tree(proj) == before and not (proj / "out").exists()


def test_wrong_field_types_in_the_state_are_one_line_naming_it(proj, capsys):
    hipify(proj, capsys=capsys)
    path = state_path_for(proj / "out")
    data = json.loads(path.read_text())
    data["hunks"][0]["old_start"] = "8"
    path.write_text(json.dumps(data))
    for argv in (["review", str(proj / "out"), "--write"], ["review", str(proj / "out"), "--summary"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(path) in err and "'old_start' is str, expected int" in err and len(err.strip().splitlines()) == 1
    assert not (proj / "out").exists()
    assert os.path.getsize(path) > 0  # kept as it is


@pytest.mark.slow
def test_writes_killed_at_random_points_lose_nothing_and_leave_no_temp_files(tmp_path, capsys):
    """SIGKILL a real `hipwizard review --write` at random moments while decisions flip between runs; the next
    write finishes the job: output identical to an uninterrupted write, no temp file, no false conflict."""
    import random
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "src").mkdir()
    for n in range(60):
        (tmp_path / "src" / f"k{n:02}.cu").write_text(KERNEL.replace("k(", f"k{n}("))
    assert main(["hipify", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path),
                 "--backend", "builtin", "--no-check", "--json"]) == 0
    capsys.readouterr()
    path = state_path_for(tmp_path / "out")

    def set_all(state: str) -> None:
        r = ReviewState.load(path)
        r.decide([h.hunk_id for h in r.hunks], state)
        r.compact()

    rng = random.Random(13)
    mixed = 0  # kills that landed in the middle of the write (files of both decisions in the folder)
    argv = [sys.executable, "-m", "hipwizard", "review", str(tmp_path / "out"), "--write", "--no-check"]
    for i in range(20):
        set_all("accepted" if i % 2 else "rejected")
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 0.8))  # start-up is ~0.3 s, the write of 60 files ~0.15 s
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        texts = {p.read_text().count("hipMalloc") for p in (tmp_path / "out").glob("*.cu")}
        mixed += len(texts) > 1
    set_all("accepted")
    rc, text = write(tmp_path, capsys)
    assert rc == 0 and "conflict" not in text, text
    leftovers = [p for p in tmp_path.rglob("*.tmp")]
    assert leftovers == []
    got = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    # the reference: the same decisions written once, uninterrupted, into a fresh folder
    ref = ReviewState.load(path)
    ref.out = tmp_path / "ref"
    from hipwizard.port.output.apply import apply
    apply(ref, check=False)
    assert got == {p.name: p.read_bytes() for p in (tmp_path / "ref").iterdir()} and len(got) == 60
    print(f"kills during a write: {mixed} of 20")
