"""`hipwizard review`: headless summary and write; the crash test (a real process in a pty, SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pexpect
import pytest

from hipwizard.port.review.state import ReviewState
from tests.port.review_factory import KERNEL, new_review, risky_project


def _hipwizard(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipwizard", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_summary_json_and_text(tmp_path):
    review = new_review(tmp_path)
    review.decide([review.hunks[0].hunk_id], "accepted")
    proc = _hipwizard("review", str(review.out), "--summary", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["accepted"], data["pending"], data["hunks"]) == (1, len(review.hunks) - 1, len(review.hunks))
    text = _hipwizard("review", str(review.path), "--summary").stdout
    assert f"1 of {len(review.hunks)} hunks decided" in text and "high-risk pending" in text


def test_write_without_check_and_bad_inputs(tmp_path):
    review = new_review(tmp_path, {"k.cu": KERNEL})
    review.decide([h.hunk_id for h in review.hunks], "accepted")
    proc = _hipwizard("review", str(review.out), "--write", "--no-check")
    assert proc.returncode == 0, proc.stderr
    assert "wrote 1 of 1 files" in proc.stdout and (review.out / "k.cu").exists()
    missing = _hipwizard("review", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    review.path.write_text("{broken")
    broken = _hipwizard("review", str(review.out), "--summary")
    assert broken.returncode == 2 and "unreadable" in broken.stderr and review.path.read_text() == "{broken"


@pytest.mark.slow
def test_decisions_survive_sigkill_of_a_real_review_process(tmp_path):
    review = new_review(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30")
    child = pexpect.spawn(sys.executable, ["-m", "hipwizard", "review", str(review.out)], env=env,
                          dimensions=(30, 100), timeout=30)
    try:
        child.expect("hunk 1/", timeout=60)
        keys = "yynjy"  # accept, accept, reject, skip one, accept
        expected = {ids[0]: "accepted", ids[1]: "accepted", ids[2]: "rejected", ids[4]: "accepted"}
        for key in keys:
            child.send(key)
            time.sleep(0.3)
        deadline = time.monotonic() + 20  # the last keystroke may still be in flight: wait until it is saved
        while time.monotonic() < deadline and ReviewState.load(review.path).revision < 4:
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
    after = ReviewState.load(review.path)
    assert {i: after.decision(i).state for i in expected} == expected
    assert after.decision(ids[3]).state == "pending"
    # restarting resumes at the first pending hunk (the skipped one) with every decision intact
    child = pexpect.spawn(sys.executable, ["-m", "hipwizard", "review", str(review.out)], env=env,
                          dimensions=(30, 100), timeout=30)
    try:
        child.expect("hunk 4/4 of file", timeout=60)
    finally:
        child.kill(signal.SIGKILL)
        child.wait()
    assert ReviewState.load(review.path).revision == after.revision


def test_summary_and_write_count_risks_on_unchanged_lines(tmp_path):
    review = risky_project(tmp_path)
    text = _hipwizard("review", str(review.out), "--summary").stdout
    assert ("⚑ 2 line(s) need a hand edit: 2 with risks on unchanged lines (2 risks: 2 high, 0 med, 0 low) in 1 "
            "file(s), 0 with an API HIP lacks") in text
    data = json.loads(_hipwizard("review", str(review.out), "--summary", "--json").stdout)
    assert data["untouched"]["total"] == 2
    proc = _hipwizard("review", str(review.out), "--write", "--no-check", "--include-pending")
    assert proc.returncode == 0, proc.stderr
    assert "⚑ include/common.cuh:4  WARP32_LITERAL (high)  #define WARP_SIZE 32" in proc.stdout
    assert (review.out / "include" / "common.cuh").read_text().splitlines()[3] == "#define WARP_SIZE 32"


def test_headless_write_with_pending_hunks_lists_them_and_needs_include_pending(tmp_path):
    review = new_review(tmp_path, {"k.cu": KERNEL})
    ids = [h.hunk_id for h in review.hunks]
    assert len(ids) >= 2
    review.decide([ids[0]], "accepted")
    refused = _hipwizard("review", str(review.out), "--write", "--no-check")
    assert refused.returncode == 2 and refused.stdout == "" and "Traceback" not in refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line and line.startswith("hipwizard: error: ")
    assert f"{len(ids) - 1} of {len(ids)} hunks still pending (k.cu#2" in line and "--include-pending" in line
    assert "pending ones stay the original CUDA" in line and not review.out.exists()
    proc = _hipwizard("review", str(review.out), "--write", "--no-check", "--include-pending")
    assert proc.returncode == 0, proc.stderr
    assert f"○ {len(ids) - 1} of {len(ids)} hunks still pending (k.cu#2" in proc.stdout
    written = (review.out / "k.cu").read_text()
    first, second = review.hunks[0], review.hunks[1]
    assert "".join(first.new_lines) in written  # the decided hunk is applied
    assert "".join(second.old_lines) in written and "".join(second.new_lines) not in written  # pending: CUDA
    as_json = json.loads(_hipwizard("review", str(review.out), "--write", "--no-check", "--include-pending",
                                    "--json").stdout)
    assert as_json["pending"][0] == "k.cu#2" and len(as_json["pending"]) == len(ids) - 1
