"""The iterative loop in a real pseudo-terminal: `hipwizard review OUT` opens, y accepts the first hunk, q quits;
`hipwizard hipify SRC --out OUT` re-runs headless over the same source; the review opens again with the hunk
still accepted (on screen and in the state)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pexpect
import pytest

from hipwizard.port.review.state import ReviewState, state_path_for
from tests.port.test_iterative_port import KERNEL

ENV = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30")


def _hipify(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "hipwizard", "hipify", str(tmp_path / "src"), "--out",
                           str(tmp_path / "out"), "--workspace", str(tmp_path), "--backend", "builtin",
                           "--hip-version", "6.1"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _review(tmp_path) -> pexpect.spawn:
    return pexpect.spawn(sys.executable, ["-m", "hipwizard", "review", str(tmp_path / "out")], env=ENV,
                         cwd=str(tmp_path), dimensions=(30, 100), timeout=30, encoding="utf-8")


def _state(tmp_path) -> ReviewState:
    return ReviewState.load(state_path_for(tmp_path / "out"))


@pytest.mark.slow
def test_accept_quit_rerun_hipify_reopen_keeps_the_decision(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(KERNEL)
    _hipify(tmp_path)
    first = _state(tmp_path).hunks[0].hunk_id
    assert len(_state(tmp_path).hunks) > 1
    child = _review(tmp_path)
    try:
        child.expect("hunk 1/", timeout=60)
        child.send("y")
        deadline = time.monotonic() + 20  # the keystroke is saved at once; wait for it before quitting
        while time.monotonic() < deadline and _state(tmp_path).decision(first).state != "accepted":
            time.sleep(0.1)
        child.send("q")
        child.expect(pexpect.EOF, timeout=30)
        child.close()
        assert child.exitstatus == 0, child.before
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
    assert _state(tmp_path).decision(first).state == "accepted"

    _hipify(tmp_path)  # the re-run over the same source
    after = _state(tmp_path)
    assert after.hunks[0].hunk_id == first and after.decision(first).state == "accepted"
    assert after.counts().accepted == 1

    child = _review(tmp_path)
    try:
        child.expect("hunk 2/", timeout=60)  # it resumes at the first pending hunk: the first is decided
        child.send("k")  # back to the first hunk: shown as accepted
        child.expect("✔ accepted", timeout=30)
        child.send("q")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
    assert _state(tmp_path).decision(first).state == "accepted"
