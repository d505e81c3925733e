"""Kinds learned where dual-target projects diverge for AMD (hipwizard/port/risk/divergence.py, issue 32) that
need more than one line or one file: a project's alias of a CUDA name HIP lacks, flagged where it is used."""

from __future__ import annotations

from hipwizard.port.risk.divergence import alias_uses, lacking_aliases
from hipwizard.port.risk.flags import code_lines
from hipwizard.port.translation.engine import port_tree

VENDOR = """#pragma once
#include <cudnn.h>
#define gpudnnRNNForward cudnnRNNForward
#define gpudnnSetTensorNdDescriptor cudnnSetTensorNdDescriptor
#define gpuMalloc cudaMalloc
typedef cudnnMathType_t gpudnnMathType_t;
"""
USER = """#include "vendor.h"

int run(void* h, void* d, void* p) {
  gpuMalloc(&p, 16);
  // gpudnnRNNForward in a comment is no call
  return gpudnnRNNForward(h, d);
}
"""


def _rules_at(ft) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in [*ft.untouched_flags, *(f for h in ft.hunks for f in h.flags)]:
        out.setdefault(f.line, set()).add(f.rule_id)
    return out


def test_only_aliases_of_calls_hip_lacks_count():
    found = lacking_aliases("\n".join(code_lines(VENDOR)))
    # cudnnRNNForward has no MIOpen name; cudaMalloc has a HIP one; a type alias picks its AMD type in one place
    assert set(found) == {"gpudnnRNNForward", "gpudnnSetTensorNdDescriptor"}
    assert found["gpudnnRNNForward"] == ("cudnnRNNForward", 2)
    uses = alias_uses(code_lines(USER), found, own=False)
    assert uses == [(5, "gpudnnRNNForward")]  # the call, not the comment


def test_an_alias_from_another_file_is_flagged_at_its_use_with_where_it_is_defined(tmp_path):
    (tmp_path / "vendor.h").write_text(VENDOR)
    (tmp_path / "rnn.cu").write_text(USER)
    (tmp_path / "plain.cu").write_text(USER.replace("gpudnnRNNForward(h, d)", "0").replace('#include "vendor.h"\n', ""))
    files = {ft.path: ft for ft in port_tree(tmp_path, backend="builtin").files}
    rnn = files["rnn.cu"]
    call = next(i for i, x in enumerate(rnn.translated.split("\n"), 1) if "return gpudnnRNNForward" in x)
    assert "VENDOR_ALIAS" in _rules_at(rnn).get(call, set())
    flag = next(f for f in [*rnn.untouched_flags, *(f for h in rnn.hunks for f in h.flags)]
                if f.rule_id == "VENDOR_ALIAS")
    assert "cudnnRNNForward (vendor.h:3)" in flag.reason
    assert not any("VENDOR_ALIAS" in k for k in _rules_at(files["plain.cu"]).values())
    # the definitions themselves are not uses
    assert not any("VENDOR_ALIAS" in k for k in _rules_at(files["vendor.h"]).values())


def test_an_index_written_over_two_lines_is_a_wide_index():
    from hipwizard.port.risk.divergence import _grid_32bit

    # FBGEMM's quantize_padded_fp8_rowwise.cu before its ROCm grid-stride loop
    lines = ["__global__ void q(float* y, int64_t n) {", "  const auto row =",
             "      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;", "  if (row >= n) {", "    return;",
             "  }", "  y[row] = 0;", "}"]
    assert _grid_32bit(lines) == [1, 7]  # the index (its return within 3 lines) and where the loop would close
    narrow = [*lines[:1], "  const int row =", "      blockIdx.x * blockDim.x + threadIdx.x;", *lines[3:]]
    assert _grid_32bit(narrow) == []  # a 32-bit index of a 1-D grid: CUDA cannot go past 2^32 threads either


def test_a_full_warp_mask_with_digit_separators_is_32_bits():
    from hipwizard.port.risk.flags import find_risks

    text = ("static constexpr uint32_t kFullWarpMask = 0xff'ff'ff'ffu;\n"
            "static constexpr uint64_t kFullWarpMask64 = 0xff'ff'ff'ff'ff'ff'ff'ffull;\n")
    assert [f.line for f in find_risks(text) if f.rule.rule_id == "FULL_MASK_32"] == [1]


def test_a_library_header_included_through_a_build_path_is_the_same_header():
    from hipwizard.port.risk.flags import find_risks

    text = ('#include "third_party/gpus/cuda/include/cusolverSp.h"\n'  # jaxlib's solver_interface.h
            '#include "mylib/cusolverSpWrapper.h"\n')  # the project's own header: another name
    assert [f.line for f in find_risks(text) if f.rule.rule_id == "LIBRARY_HEADER"] == [1]
