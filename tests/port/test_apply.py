"""apply: rebuilt files equal what `patch` makes of the accepted hunks; nothing escapes the output."""

from __future__ import annotations

import os
import random
import subprocess

import pytest

from hipwizard.errors import UserError
from hipwizard.port.model import Hunk
from hipwizard.port.output.apply import apply, blame_line, rebuild, safe_target
from tests.port.review_factory import KERNEL, new_review


def _unified(hunks: list[Hunk], rel: str) -> str:
    """A unified diff holding only ``hunks`` (what `git add -p` would stage)."""
    parts = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    for h in hunks:
        before, after = h.context_before, h.context_after
        old_n = len(before) + len(h.old_lines) + len(after)
        new_n = len(before) + len(h.new_lines) + len(after)
        start = h.old_start - len(before)
        parts.append(f"@@ -{start if old_n else start - 1},{old_n} +{start},{new_n} @@\n")
        parts += [f" {_nl(x)}" for x in before] + [f"-{_nl(x)}" for x in h.old_lines]
        parts += [f"+{_nl(x)}" for x in h.new_lines] + [f" {_nl(x)}" for x in after]
    return "".join(parts)


def _nl(line: str) -> str:
    return line if line.endswith("\n") else line + "\n"


def _patched(tmp_path, original: str, hunks: list[Hunk]) -> str:
    work = tmp_path / "patchwork"
    work.mkdir(exist_ok=True)
    target = work / "f.cu"
    target.write_text(original)
    if hunks:
        diff = _unified(hunks, "f.cu")
        proc = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "-d", str(work)], input=diff,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return target.read_text()


@pytest.mark.parametrize("seed", range(12))
def test_random_accept_subsets_rebuild_what_patch_makes(tmp_path, seed):
    state = new_review(tmp_path, {"f.cu": KERNEL})
    rng = random.Random(seed)
    choice = {h.hunk_id: rng.choice(["accepted", "rejected", "pending"]) for h in state.hunks}
    for hid, decision in choice.items():
        if decision != "pending":
            state.decide([hid], decision)
    report = apply(state, check=False)
    assert [f.status for f in report.files] == ["written"]
    accepted = [h for h in state.hunks if choice[h.hunk_id] == "accepted"]
    assert (state.out / "f.cu").read_text() == _patched(tmp_path, KERNEL, accepted)


def test_accept_all_equals_the_translation_and_edits_are_written(tmp_path):
    state = new_review(tmp_path, {"f.cu": KERNEL})
    state.decide([h.hunk_id for h in state.hunks], "accepted")
    apply(state, check=False)
    from tests.port.review_factory import hipify_like
    assert (state.out / "f.cu").read_text() == hipify_like(KERNEL)
    free = next(h for h in state.hunks if any("hipFree" in x for x in h.new_lines))
    state.edit(free.hunk_id, ["  hipFree(d);  // edited by hand", "  d = nullptr;"])
    report = apply(state, check=False)
    text = (state.out / "f.cu").read_text()
    assert "hipFree(d);  // edited by hand\n  d = nullptr;\n  return 0;" in text
    a, b = report.files[0].spans[free.hunk_id]
    assert text.splitlines()[a - 1:b - 1] == ["  hipFree(d);  // edited by hand", "  d = nullptr;"]


def test_rebuild_keeps_crlf_and_missing_final_newline():
    original = "a\r\nb\r\nc"
    hunks = [Hunk("f", 1, ["a"], 1, ["A"]), Hunk("f", 3, ["c"], 3, ["C"])]
    text, spans = rebuild(original, hunks, lambda h: h.new_lines)
    assert text == "A\r\nb\r\nC"
    assert spans == {hunks[0].hunk_id: (1, 2), hunks[1].hunk_id: (3, 4)}


def test_rebuild_insertion_and_mismatch():
    text, _ = rebuild("x\ny\n", [Hunk("f", 1, [], 1, ['#include "hip/hip_runtime.h"'])], lambda h: h.new_lines)
    assert text == '#include "hip/hip_runtime.h"\nx\ny\n'
    with pytest.raises(ValueError, match="does not match"):
        rebuild("x\ny\n", [Hunk("f", 2, ["not y"], 2, ["z"])], lambda h: h.new_lines)


def test_non_utf8_bytes_are_kept(tmp_path):
    state = new_review(tmp_path, {"f.cu": KERNEL})
    raw = (state.src / "f.cu").read_bytes().replace(b"#include <cstdio>", b"#include <cstdio> // caf\xe9")
    (state.src / "f.cu").write_bytes(raw)
    from tests.port.review_factory import hipify_like, translation
    text = raw.decode("utf-8", "surrogateescape")
    state.reconcile([translation("f.cu", text, hipify_like(text))])
    state.decide([h.hunk_id for h in state.hunks], "accepted")
    apply(state, check=False)
    assert b"// caf\xe9" in (state.out / "f.cu").read_bytes()


def test_changed_source_is_reported_stale_not_written(tmp_path):
    state = new_review(tmp_path)
    (state.src / "main.cu").write_text("// rewritten\n")
    report = apply(state, check=False)
    by = {f.path: f for f in report.files}
    assert by["main.cu"].status == "stale" and "changed since the review" in by["main.cu"].detail
    assert by["kernels/scale.cu"].status == "written"
    assert not (state.out / "main.cu").exists()


@pytest.mark.parametrize("rel", ["../evil.cu", "/etc/evil.cu", "a/../../evil.cu"])
def test_paths_that_leave_the_output_are_refused(tmp_path, rel):
    with pytest.raises(UserError, match="leave"):
        safe_target(tmp_path, rel)


def test_symlink_out_of_the_output_refuses_the_whole_write(tmp_path):
    state = new_review(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    state.out.mkdir()
    os.symlink(outside, state.out / "kernels")
    with pytest.raises(UserError, match="symlink leads out"):
        apply(state, check=False)
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in state.out.iterdir()) == ["kernels"]  # main.cu not written either


@pytest.mark.parametrize("rel", ["../escape.cu", "/tmp/escape.cu", "kernels/../../escape.cu"])
def test_a_state_naming_an_escaping_path_refuses_the_whole_write(tmp_path, rel):
    state = new_review(tmp_path)
    state.files[rel] = {"sha256": "x"}
    with pytest.raises(UserError, match="leave"):
        apply(state, check=False)
    assert not state.out.exists() and not (tmp_path / "escape.cu").exists()


def test_output_that_cannot_be_created_is_one_clear_error(tmp_path):
    state = new_review(tmp_path)
    state.out.write_text("a file, not a folder")
    with pytest.raises(UserError, match="cannot create output directory"):
        apply(state, check=False)


def test_copy_untouched_copies_other_files_but_not_the_output_itself(tmp_path):
    state = new_review(tmp_path)
    (state.src / "CMakeLists.txt").write_text("project(x)\n")
    (state.src / "data").mkdir()
    (state.src / "data" / "w.bin").write_bytes(b"\x00\x01")
    report = apply(state, check=False, copy_untouched=True)
    assert report.copied == 2
    assert (state.out / "data" / "w.bin").read_bytes() == b"\x00\x01"


def test_apply_records_the_write_in_the_state(tmp_path):
    state = new_review(tmp_path)
    apply(state, check=False)
    from hipwizard.port.review.state import ReviewState
    assert ReviewState.load(state.path).last_write.to_dict() == {"revision": 0, "files": 2, "compile_errors": 0,
                                                              "arch": "", "check_note": ""}


def test_blame_line_maps_errors_to_hunks():
    spans = {"a": (3, 5), "b": (10, 10), "c": (20, 22)}
    assert blame_line(spans, 4) == "a"
    assert blame_line(spans, 10) == "b"  # a deletion: its error lands where it was
    assert blame_line(spans, 7) == "a"   # 2 lines after "a"
    assert blame_line(spans, 15) is None
    assert blame_line(spans, None) is None
