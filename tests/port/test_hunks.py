"""Hunks: stable ids, exact rebuild, and any accepted subset rebuilds what `patch` makes of those hunks."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from hipwizard.port.hunks import apply_hunks, hunk_at_line, split_hunks, split_lines

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 41))


def _translated(seed: int) -> str:
    rng = random.Random(seed)
    lines = split_lines(ORIGINAL)
    out = []
    for line in lines:
        r = rng.random()
        if r < 0.15:
            out.append(line.replace("line", "LINE"))
        elif r < 0.2:
            continue  # deleted
        elif r < 0.25:
            out.extend([line, f"inserted after {line}"])
        else:
            out.append(line)
    return "".join(out)


def test_split_lines_keeps_endings():
    assert split_lines("a\r\nb\nc") == ["a\r\n", "b\n", "c"]
    assert "".join(split_lines("x\n\n")) == "x\n\n"


def test_equal_texts_have_no_hunks():
    assert split_hunks("f.cu", ORIGINAL, ORIGINAL) == []


def test_hunks_carry_context_and_stable_ids():
    new = ORIGINAL.replace("line 10\n", "LINE 10\n")
    (h,) = split_hunks("f.cu", ORIGINAL, new)
    assert (h.old_start, h.old_lines, h.new_lines) == (10, ["line 10\n"], ["LINE 10\n"])
    assert h.context_before == ["line 7\n", "line 8\n", "line 9\n"]
    assert h.context_after == ["line 11\n", "line 12\n", "line 13\n"]
    assert split_hunks("f.cu", ORIGINAL, new)[0].hunk_id == h.hunk_id
    assert split_hunks("g.cu", ORIGINAL, new)[0].hunk_id != h.hunk_id


@pytest.mark.parametrize("seed", range(6))
def test_all_or_nothing_rebuilds_exactly(seed):
    new = _translated(seed)
    hunks = split_hunks("f.cu", ORIGINAL, new)
    assert apply_hunks(ORIGINAL, hunks, [h.hunk_id for h in hunks]) == new
    assert apply_hunks(ORIGINAL, hunks, []) == ORIGINAL


def _unified(hunks, accepted) -> str:
    """A unified diff of only the accepted hunks (0 lines of context), for GNU patch."""
    out = ["--- a/f.cu\n", "+++ b/f.cu\n"]
    shift = 0
    for h in sorted(hunks, key=lambda h: h.old_start):
        if h.hunk_id not in accepted:
            continue
        old_start = h.old_start if h.old_lines else h.old_start - 1
        new_start = old_start + shift if h.new_lines else old_start + shift
        if h.new_lines and not h.old_lines:
            new_start += 1
        elif not h.new_lines and h.old_lines:
            new_start -= 1
        out.append(f"@@ -{old_start},{len(h.old_lines)} +{new_start},{len(h.new_lines)} @@\n")
        out += ["-" + x for x in h.old_lines] + ["+" + x for x in h.new_lines]
        shift += len(h.new_lines) - len(h.old_lines)
    return "".join(out)


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch not installed")
@pytest.mark.parametrize("seed", range(8))
def test_random_accept_subsets_match_gnu_patch(tmp_path, seed):
    new = _translated(seed)
    hunks = split_hunks("f.cu", ORIGINAL, new)
    rng = random.Random(100 + seed)
    accepted = {h.hunk_id for h in hunks if rng.random() < 0.5}
    target = tmp_path / "f.cu"
    target.write_text(ORIGINAL)
    diff = _unified(hunks, accepted)
    proc = subprocess.run(["patch", "-s", "-p1", "-F0", "--no-backup-if-mismatch", "-d", str(tmp_path)],
                          input=diff, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert apply_hunks(ORIGINAL, hunks, accepted) == target.read_text()


def test_apply_refuses_hunks_of_another_text():
    hunks = split_hunks("f.cu", ORIGINAL, ORIGINAL.replace("line 3\n", "x\n"))
    with pytest.raises(ValueError):
        apply_hunks(ORIGINAL.replace("line 3\n", "changed\n"), hunks, [hunks[0].hunk_id])


def test_hunk_at_line_follows_decisions():
    new = ORIGINAL.replace("line 2\n", "a\nb\nc\n").replace("line 30\n", "LINE 30\n")
    first, second = split_hunks("f.cu", ORIGINAL, new)
    # both accepted: line 2 grew to 3 lines, so original line 30 is now line 32
    assert hunk_at_line([first, second], {first.hunk_id, second.hunk_id}, 32) is second
    assert hunk_at_line([first, second], {second.hunk_id}, 30) is second
    assert hunk_at_line([first, second], {first.hunk_id}, 3) is first
    assert hunk_at_line([first, second], set(), 10) is None
