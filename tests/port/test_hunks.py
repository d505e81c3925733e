"""Hunks: stable ids, exact rebuild, and any accepted subset rebuilds what `patch` makes of those hunks."""

from __future__ import annotations

import difflib
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.model import Hunk
from hipwizard.port.translation.builtin import BuiltinTranslator, TranslateOptions
from hipwizard.port.translation.edits import Edit, EditLog
from hipwizard.port.translation.hunks import (
    apply_hunks,
    hunk_at_line,
    hunks_from_edits,
    split_hunks,
    split_lines,
    unique_ids,
)

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


# -- the linear-time paths: same hunks as a full difflib diff, without its cost ---------------------------

def _difflib_hunks(path, original, translated, context=3):
    """What hunks were before: difflib over the whole file (the reference the fast paths must reproduce)."""
    a, b = split_lines(original), split_lines(translated)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return unique_ids([Hunk(path, i1 + 1, a[i1:i2], j1 + 1, b[j1:j2], a[max(0, i1 - context):i1], a[i2:i2 + context])
                       for tag, i1, i2, j1, j2 in ops if tag != "equal"])


def _ids(hunks):
    return [(h.hunk_id, h.old_start, h.new_start) for h in hunks]


def _cuda_sources():
    corpus = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "corpus"
    files = sorted(p for p in DEMO_PROJECT.rglob("*") if p.suffix in (".cu", ".cuh"))
    return files + sorted(p for p in corpus.iterdir() if p.suffix in (".cu", ".cpp"))


@pytest.mark.parametrize("launches", [False, True])
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_edit_log_hunks_equal_a_full_diff_on_real_cuda(launches, eol):
    translator = BuiltinTranslator(TranslateOptions(hip_kernel_execution_syntax=launches))
    checked = 0
    for path in _cuda_sources():
        text = path.read_text().replace("\n", eol)
        t = translator.translate(text)
        want = _ids(_difflib_hunks(path.name, text, t.text))
        assert _ids(hunks_from_edits(path.name, text, t.text, t.spans)) == want, path.name
        assert _ids(split_hunks(path.name, text, t.text)) == want, path.name
        checked += len(want)
    assert checked > 80  # the corpus really changes (95 hunks)


@pytest.mark.parametrize("seed", range(40))
def test_line_diff_hunks_equal_difflib_and_rebuild(seed):
    new = _translated(seed)
    assert _ids(split_hunks("f.cu", ORIGINAL, new)) == _ids(_difflib_hunks("f.cu", ORIGINAL, new))


def test_edit_log_regroups_a_replacement_that_drops_a_newline():
    # "b\n" -> "B" joins lines 2 and 3: the hunk must take line 3 too, or the rebuilt file would differ
    original = "a\nb\nc\nd\n"
    log = EditLog(original)
    log.then([Edit(2, 4, "B")])
    hunks = hunks_from_edits("f.cu", original, log.text, log.spans)
    assert [(h.old_lines, h.new_lines) for h in hunks] == [(["b\n", "c\n"], ["Bc\n"])]
    assert apply_hunks(original, hunks, [h.hunk_id for h in hunks]) == log.text


def test_line_diff_gives_up_on_a_huge_gap_without_anchors_in_time():
    # 3,000 identical lines replaced by 3,000 other identical lines: nothing unique to anchor on, and a
    # difflib run on the gap would cost ~9e6 steps; the size-aware fallback takes it as one replacement.
    original = "x\n" * 3000 + "end\n"
    translated = "y\n" * 2999 + "end\n"
    t0 = time.perf_counter()
    hunks = split_hunks("f.cu", original, translated)
    assert time.perf_counter() - t0 < 2
    assert apply_hunks(original, hunks, [h.hunk_id for h in hunks]) == translated


def test_big_file_hunks_take_seconds_not_minutes():
    # ~2 MB of real CUDA: difflib over the whole file took minutes at this size (250 kB: 65 s)
    text = "".join(p.read_text().replace("_kernel", f"_kernel_{i}") for i in range(60) for p in _cuda_sources())
    t = BuiltinTranslator().translate(text)
    t0 = time.perf_counter()
    by_log = hunks_from_edits("big.cu", text, t.text, t.spans)
    by_diff = split_hunks("big.cu", text, t.text)
    assert time.perf_counter() - t0 < 15  # ~1 s on the dev container
    assert len(by_log) > 5000 and _ids(by_log) == _ids(by_diff)
    assert apply_hunks(text, by_log, [h.hunk_id for h in by_log]) == t.text


@pytest.mark.slow
@pytest.mark.parametrize("launches", [False, True])
def test_line_diff_of_a_file_without_unique_lines_matches_the_edit_log(launches):
    # one file repeated 200 times: no line is unique, so nothing anchors the diff; the greedy alignment
    # must still give the hunks the translator knows it made (difflib here would take minutes)
    text = "".join(p.read_text() for p in sorted(DEMO_PROJECT.rglob("*.cu*"))) * 200
    t = BuiltinTranslator(TranslateOptions(hip_kernel_execution_syntax=launches)).translate(text)
    t0 = time.perf_counter()
    by_diff = split_hunks("f.cu", text, t.text)
    assert time.perf_counter() - t0 < 5  # ~0.1 s on the dev container
    assert _ids(by_diff) == _ids(hunks_from_edits("f.cu", text, t.text, t.spans))


# -- identical hunks (the same change after the same lines, twice in one file) ----------------------------

TWICE = """#include <cuda_runtime.h>
void f(int *p) {
  p[0] = 1;
  p[1] = 2;
  p[2] = 3;
  cudaDeviceSynchronize();
  p[3] = 4;
  p[0] = 1;
  p[1] = 2;
  p[2] = 3;
  cudaDeviceSynchronize();
  p[3] = 4;
}
int main() {
  f(0);
  return 0;
}
"""


def test_identical_hunks_get_distinct_stable_ids():
    t = BuiltinTranslator(TranslateOptions()).translate(TWICE)
    for hunks in (hunks_from_edits("k.cu", TWICE, t.text, t.spans), split_hunks("k.cu", TWICE, t.text)):
        syncs = [h for h in hunks if "hipDeviceSynchronize" in "".join(h.new_lines)]
        assert len(syncs) == 2 and syncs[0].content_key() == syncs[1].content_key()
        assert syncs[1].hunk_id == syncs[0].hunk_id + "-2"
        assert len({h.hunk_id for h in hunks}) == len(hunks)
    assert _ids(split_hunks("k.cu", TWICE, t.text)) == _ids(hunks_from_edits("k.cu", TWICE, t.text, t.spans))


@pytest.mark.slow
def test_identical_hunks_write_twice_through_the_cli_without_stale(tmp_path):
    import json
    import sys

    from hipwizard.port.review.state import ReviewState

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(TWICE)

    def hipwizard(*args):
        return subprocess.run([sys.executable, "-m", "hipwizard", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120)

    assert hipwizard("hipify", "src", "--out", "out").returncode == 0
    state = json.loads((tmp_path / "out.review.json").read_text())
    ids = [h["hunk_id"] for h in state["hunks"]]
    assert len(ids) == 3 and len(set(ids)) == 3
    review = ReviewState.load(tmp_path / "out.review.json")
    review.decide(ids, "accepted")
    review.compact()
    for _ in range(2):
        proc = hipwizard("review", "out", "--write", "--no-check")
        assert proc.returncode == 0 and "stale" not in proc.stdout, proc.stdout + proc.stderr
        assert (tmp_path / "out" / "k.cu").read_text().count("hipDeviceSynchronize();") == 2
    assert hipwizard("hipify", "src", "--out", "out").returncode == 0  # a re-run keeps the same ids
    assert [h["hunk_id"] for h in json.loads((tmp_path / "out.review.json").read_text())["hunks"]] == ids
