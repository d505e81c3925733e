"""One writer per review (``review_lock``): real processes holding, racing for and dying with the lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hipwizard.errors import UserError
from hipwizard.port.review.lock import ReviewBusy, lock_path
from hipwizard.port.review.state import ReviewState
from tests.port.review_factory import new_review

# A second session: holds the review (as the Port screen does) and decides what it is told on stdin.
HOLDER = """
import sys
from hipwizard.port.review.state import ReviewState
review = ReviewState.load(sys.argv[1], lock=sys.argv[2])
print("ready", "ro" if review.read_only else "rw", flush=True)
for line in sys.stdin:
    hid, state = line.split()
    try:
        review.decide([hid], state)
        print("saved", hid, flush=True)
    except Exception as exc:
        print("refused", type(exc).__name__, exc, flush=True)
"""


def _holder(path, lock="hold"):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), lock], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().split()[0] == "ready"
    return proc


def _tell(proc, hid, state):
    proc.stdin.write(f"{hid} {state}\n")
    proc.stdin.flush()
    return proc.stdout.readline()


def _hipwizard(*args):
    return subprocess.run([sys.executable, "-m", "hipwizard", *args], capture_output=True, text=True, timeout=120)


def test_a_second_cli_writer_is_refused_and_kill_9_of_the_holder_frees_the_review(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    review.decide(ids, "accepted")
    holder = _holder(review.path)
    try:
        assert _tell(holder, ids[0], "rejected").startswith("saved")
        proc = _hipwizard("review", str(review.out), "--write", "--no-check")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"is open in another session (pid {holder.pid})" in proc.stderr
        assert proc.stderr.startswith("hipwizard: error: ") and not (review.out / "main.cu").exists()
        resolve = _hipwizard("review", str(review.out), "--resolve", "main.cu=mine")
        assert resolve.returncode == 2 and "another session" in resolve.stderr
        rerun = _hipwizard("hipify", str(review.src), "--out", str(review.out), "--backend", "builtin")
        assert rerun.returncode == 2 and "another session" in rerun.stderr  # reconciling would write it
        summary = _hipwizard("review", str(review.out), "--summary", "--json")  # reading is never refused
        assert summary.returncode == 0 and json.loads(summary.stdout)["rejected"] == 1
        # An in-process change is refused too, and memory stays as it was.
        with pytest.raises(ReviewBusy):
            review.decide([ids[1]], "rejected")
        assert review.decision(ids[1]).state == "accepted"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    # The OS dropped the dead holder's lock: the next writer goes ahead (its stale pid in the file means nothing).
    proc = _hipwizard("review", str(review.out), "--write", "--no-check")
    assert proc.returncode == 0, proc.stderr
    again = ReviewState.load(review.path)
    assert again.decision(ids[0]).state == "rejected" and again.decision(ids[1]).state == "accepted"


def test_two_sessions_never_lose_a_decision(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    first = _holder(review.path, "try")
    second = _holder(review.path, "try")  # opened while the first holds it: read-only
    try:
        for hid in ids:
            assert _tell(first, hid, "accepted").startswith("saved")
            answer = _tell(second, hid, "rejected")
            assert answer.startswith("refused ReviewBusy") and f"pid {first.pid}" in answer
        with pytest.raises(ReviewBusy):
            ReviewState.load(review.path, lock="hold")
    finally:
        for p in (first, second):
            p.stdin.close()
            p.wait(timeout=10)
    again = ReviewState.load(review.path, lock="hold")  # the holders are gone: free again
    assert [again.decision(i).state for i in ids] == ["accepted"] * len(ids)
    assert again.revision == len(ids) and again.read_only is None
    again.release()


def test_a_review_changed_behind_a_stale_copy_is_refused_not_collided(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    stale = ReviewState.load(review.path)  # no session lock: an old copy in memory
    writer = _holder(review.path)
    assert _tell(writer, ids[0], "accepted").startswith("saved")
    writer.stdin.close()
    writer.wait(timeout=10)
    with pytest.raises(UserError, match="changed by another session"):
        stale.decide([ids[1]], "rejected")  # would have appended a second revision 1
    again = ReviewState.load(review.path)
    assert again.revision == 1 and again.decision(ids[0]).state == "accepted"
    assert again.decision(ids[1]).state == "pending" and again.journal_unreadable == []


def test_a_torn_last_journal_line_still_opens_and_the_next_change_follows_it(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    review.decide([ids[0]], "accepted")
    with open(review.journal, "ab") as fh:  # a crash in the middle of appending revision 2
        fh.write(b'{"rev":2,"op":"decide","ids":["')
    reopened = ReviewState.load(review.path, lock="hold")
    assert reopened.revision == 1 and reopened.journal_unreadable == [2]
    reopened.decide([ids[1]], "rejected")
    reopened.release()
    last = ReviewState.load(review.path)
    assert last.revision == 2 and [last.decision(i).state for i in ids[:2]] == ["accepted", "rejected"]


def test_the_journal_and_the_lock_are_never_written_through_a_symlink(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, review.journal)
    opened = ReviewState.load(review.path)
    with pytest.raises(UserError, match="symbolic link"):
        opened.decide([ids[0]], "accepted")
    assert victim.read_text() == "precious\n" and opened.decision(ids[0]).state == "pending"
    proc = _hipwizard("review", str(review.out), "--write", "--no-check")  # folding in moves the link aside
    assert victim.read_text() == "precious\n" and "Traceback" not in proc.stderr
    lock = lock_path(review.path)
    lock.unlink(missing_ok=True)
    os.symlink(victim, lock)
    proc = _hipwizard("review", str(review.out), "--write", "--no-check")
    assert proc.returncode == 2 and "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert victim.read_text() == "precious\n"


def test_the_lock_file_says_the_holder_and_is_released_on_close(tmp_path):
    review = new_review(tmp_path)
    held = ReviewState.load(review.path, lock="hold")
    assert lock_path(review.path).read_text().strip() == str(os.getpid())
    held.release()
    holder = _holder(review.path)  # another process can take it now
    try:
        deadline = time.monotonic() + 10
        while lock_path(review.path).read_text().strip() != str(holder.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lock_path(review.path).read_text().strip() == str(holder.pid)
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_an_in_process_cli_write_gives_the_lock_back_when_it_returns(tmp_path):
    from hipwizard.cli import main

    review = new_review(tmp_path)
    review.decide([h.hunk_id for h in review.hunks], "accepted")
    assert main(["review", str(review.out), "--write", "--no-check"]) == 0
    holder = _holder(review.path, "try")  # another process: writable, not read-only
    try:
        assert _tell(holder, review.hunks[0].hunk_id, "rejected").startswith("saved")
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
