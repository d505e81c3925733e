"""The engine on the demo CUDA project: flags found, untouched risks reported, stable hunk ids."""

from __future__ import annotations

import shutil

import pytest

from hipwizard.errors import UserError
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.engine import port_tree, translate_tree

# What the demo project was written to exercise.
DEMO_RULES = {"WARP32_LITERAL", "SHFL_LOOP_16", "FULL_MASK_32", "SYNC_WARP_BUILTINS", "LANE_MASK_31", "INLINE_PTX",
              "TEMPLATE_SPECIALIZATION", "BF16_TYPES", "BALLOT_32BIT", "POPC_FFS_MASK", "EXTERN_SHARED",
              "LAUNCH_BOUNDS_2ARG"}


@pytest.fixture(scope="module")
def demo_report():
    return port_tree(DEMO_PROJECT, backend="builtin", hip_version="5.2")


def test_demo_flags_every_rule_it_was_written_for(demo_report):
    found = set(demo_report.summary()["flags_by_rule"])
    assert DEMO_RULES <= found


def test_untouched_risky_lines_are_reported(demo_report):
    common = next(f for f in demo_report.files if f.path == "include/common.cuh")
    untouched = {(f.rule_id, f.line) for f in common.untouched_flags}
    lines = common.translated.splitlines()
    warp_line = next(i + 1 for i, l in enumerate(lines) if l.startswith("#define WARP_SIZE 32"))
    assert ("WARP32_LITERAL", warp_line) in untouched  # hipify never touches this define
    changed = {h.new_start + k for h in common.hunks for k in range(len(h.new_lines))}
    assert all(line not in changed for _, line in untouched)


def test_flags_sit_on_the_hunks_that_carry_them(demo_report):
    softmax = next(f for f in demo_report.files if f.path == "kernels/softmax.cu")
    bf16 = [h for h in softmax.hunks if any("bfloat16" in l for l in h.old_lines)]
    assert bf16 and all(any(fl.rule_id == "BF16_TYPES" for fl in h.flags) for h in bf16)
    spec = [h for h in softmax.hunks if any(fl.rule_id == "TEMPLATE_SPECIALIZATION" for fl in h.flags)]
    assert spec, "the __nv_bfloat16 specialisation is renamed, so its hunk is flagged"


def test_summary_counts_unsupported_and_too_new(demo_report):
    s = demo_report.summary()
    assert s["files"] == 5 and s["hunks"] == sum(len(f.hunks) for f in demo_report.files)
    assert "__shfl_xor_sync" in s["unsupported"]
    assert "cuda_bf16.h" in s["too_new"]  # hip_bf16.h needs HIP 6.0


def test_hunk_ids_survive_a_rerun():
    a = translate_tree(DEMO_PROJECT, backend="builtin")
    b = translate_tree(DEMO_PROJECT, backend="builtin")
    assert [h.hunk_id for f in a for h in f.hunks] == [h.hunk_id for f in b for h in f.hunks]


def test_unchanged_file_with_risks_still_appears(tmp_path):
    (tmp_path / "k.cu").write_text("#define WARP_SIZE 32\n__global__ void k(){}\n")
    (ft,) = translate_tree(tmp_path, backend="builtin")
    assert ft.hunks == [] or all(not h.flags for h in ft.hunks)
    assert [f.rule_id for f in ft.untouched_flags] == ["WARP32_LITERAL"]


def test_missing_source_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        port_tree(tmp_path / "nope")


def test_sources_are_never_modified(tmp_path):
    src = tmp_path / "proj"
    shutil.copytree(DEMO_PROJECT, src)
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    port_tree(src, backend="builtin")
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before
