"""The AMD-divergence benchmark's truth (benchmarks/amd_divergence.py): unifdef's CUDA-only view, how conditional
groups are paired and counted as regions, and where each lands in the view. Runs the real unifdef."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from amd_divergence import flags_of, groups_of, make_view, near  # noqa: E402

from hipwizard.port.model import Diagnostic, FileTranslation  # noqa: E402

UNIFDEF = shutil.which("unifdef")
pytestmark = pytest.mark.skipif(UNIFDEF is None, reason="unifdef not installed (apt-get install unifdef)")

SOURCE = """\
#if defined(USE_ROCM) || CUDA_VERSION >= 11000
a();
#endif
#if ROCM_VERSION >= 50000
b();
#else
c();
#endif
#ifdef USE_ROCM
d();
#elif defined(FOO)
e();
#else
f();
#endif

#ifndef USE_ROCM
#ifdef __CUDA_ARCH__
g();
#endif
#else
#ifdef BAR
h();
#endif
#endif
#if (defined(__gfx942__) || defined(__gfx90a__))
i();
#endif
static const unsigned long long kMask = 0xff'ff'ff'ffull;
#if 0
j();
#endif
"""


def _view():
    return make_view("x.cu", SOURCE, ["USE_ROCM", "ROCM_VERSION"], [], UNIFDEF)


def test_groups_pair_by_nesting_with_their_elif_and_else():
    groups = groups_of(SOURCE.split("\n"))
    assert len(groups) == 8
    assert groups[2].directives == [8, 10, 12, 14]  # #ifdef, #elif, #else, #endif of the third group
    assert groups[5].parent == (3, 1)  # #ifdef BAR sits in branch 1 (the #else) of #ifndef USE_ROCM


def test_the_view_drops_the_amd_branches_zeroes_an_undecided_condition_and_keeps_if_0():
    v = _view()
    assert "d();" not in v.view and "h();" not in v.view and "i();" not in v.view and "b();" not in v.view
    assert "c();" in v.view and "g();" in v.view and "j();" in v.view
    assert "#if 0 || CUDA_VERSION >= 11000" in v.view  # unifdef cannot decide it: USE_ROCM is 0 on CUDA
    assert any(line.startswith("#if") and "defined(FOO)" in line for line in v.view)  # the #elif became the #if
    assert v.view[v.kept[28]] == "static const unsigned long long kMask = 0xff'ff'ff'ffull;"  # digit separators


def test_each_group_the_view_changed_is_one_region_and_a_group_in_a_dropped_branch_is_not_counted():
    v = _view()
    # the zeroed #if, ROCM_VERSION's, USE_ROCM/FOO's, #ifndef USE_ROCM (its nested #ifdef BAR not counted),
    # the gfx block; #ifdef __CUDA_ARCH__ and #if 0 are untouched
    assert v.region_lines == [1, 4, 9, 17, 26]


def test_where_a_region_lands_in_the_view():
    v = _view()
    at = dict(zip(v.region_lines, v.regions, strict=True))
    assert v.view[at[1][0] - 1].startswith("#if 0 ||") and at[1][0] == at[1][1]  # only the rewritten line
    assert v.view[at[4][0] - 1] == "c();"  # the CUDA branch kept
    gfx = at[26]  # nothing kept: the two view lines around the removed block
    assert v.view[gfx[0] - 1] == "#endif" and v.view[gfx[1] - 1].startswith("static const")
    assert near(gfx[1] + 3, gfx) and not near(gfx[1] + 4, gfx)


def test_a_folded_api_diagnostic_is_no_flagged_place_of_its_own():
    # places are counted as the review lists them: line 11's diagnostic is listed through line 10's
    ft = FileTranslation("a.cu", "", "", "builtin", diagnostics=[
        Diagnostic("unsupported", "A", 10, "m"), Diagnostic("unsupported", "B", 11, "m", folded_into=10),
        Diagnostic("too_new", "C", 20, "m"), Diagnostic("warning", "QUIET", 30, "a note")])
    assert dict(flags_of(ft)) == {10: {"diag:unsupported"}, 20: {"diag:too_new"}}
