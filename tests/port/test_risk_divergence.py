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


# issue 32, fourth pass: what apex (a development project since) showed


def _lines_of(text: str, rule_id: str) -> list[int]:
    from hipwizard.port.risk.flags import find_risks

    return [f.line for f in find_risks(text) if f.rule.rule_id == rule_id]


def test_a_member_template_call_needs_the_template_keyword_only_when_its_class_depends_on_a_parameter():
    from hipwizard.port.risk.divergence import template_parameters

    text = ("template <int THREADS_PER_PIXEL, int ELEMENTS = 4, typename... Args>\n"
            "__device__ void reduce(float* smem) {\n"
            "  ParallelSums<THREADS_PER_PIXEL, ELEMENTS>::dispatch<256>(smem);\n"  # dependent: clang stops
            "  Get<0>::of<float, float>(smem);\n"  # Get<0> depends on nothing: valid without the keyword
            "  ParallelSums<THREADS_PER_PIXEL, ELEMENTS>::template dispatch<256>(smem);\n"
            "  // ParallelSums<THREADS_PER_PIXEL, ELEMENTS>::dispatch<256>(smem);\n"
            "}\n")
    assert template_parameters(text) == {"THREADS_PER_PIXEL", "ELEMENTS", "Args"}
    assert _lines_of(text, "DEPENDENT_TEMPLATE_CALL") == [3]
    # the same call outside any template that declares its arguments: not dependent, not flagged
    assert _lines_of(text.replace("template <int THREADS_PER_PIXEL, int ELEMENTS = 4, typename... Args>\n", ""),
                     "DEPENDENT_TEMPLATE_CALL") == []


def test_a_cudnn_call_miopen_renames_is_flagged_and_one_miopen_lacks_is_a_leftover():
    text = ("s = cudnnCreateTensorDescriptor(&d);\n"  # MIOpen has miopenCreateTensorDescriptor
            "s = cudnnRNNForward(h, d);\n"  # no MIOpen counterpart: LIBRARY_LEFTOVER's
            "s = cudnnCheckMine(h);\n")  # a name of the project's own, in no table: no risk
    assert _lines_of(text, "CUDNN_MIOPEN") == [1]
    assert _lines_of(text, "LIBRARY_LEFTOVER") == [2]


def test_the_per_sm_shared_memory_limit_sizes_like_the_opt_in_one():
    text = ("return getDeviceProperties(dev)->sharedMemPerMultiprocessor;\n"  # apex's groupbn cuda_utils.h
            "cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);\n"
            "int smem = prop.sharedMemPerBlock;\n")
    assert _lines_of(text, "SMEM_OPTIN_QUERY") == [1, 2]


def test_an_alias_of_a_device_builtin_is_a_shim_not_a_vendor_alias():
    text = ("#define SHFL_DOWN __shfl_down_sync\n"  # apex's welford.cu CUDA branch: the AMD one is a macro too
            "#define gpudnnRNNForward cudnnRNNForward\n"
            "__device__ float f(float v) { return SHFL_DOWN(0xffffffff, v, 1); }\n"
            "int g() { return gpudnnRNNForward(h, d); }\n")
    assert _lines_of(text, "VENDOR_ALIAS") == [4]


def test_a_test_of_divisibility_by_32_is_no_lane_index():
    text = ("x = chunk > 0 && threadIdx.x % 32 == 0 ? a : b;\n"  # mamba's scan: one leader a 32-group
            "static_assert(kNThreads % 32 == 0);\n"
            "int lane = threadIdx.x % 32;\n"
            "int src = (threadIdx.x + (1 << l)) & 31;\n")  # apex's layer_norm: a shuffle's source lane
    assert _lines_of(text, "LANE_MASK_31") == [3, 4]


def test_the_cuda_runtime_version_read_as_a_number_is_flagged_and_a_version_guard_is_not_this_kind():
    # mmcv's info.cpp: '#ifdef MMCV_WITH_HIP hipRuntimeGetVersion ... #else return CUDART_VERSION' (HIP's encoding
    # is major * 10^7 + minor * 10^5 + patch, not CUDA's major * 1000 + minor * 10)
    text = ("int v() { return CUDART_VERSION; }\n"
            "#if CUDART_VERSION >= 11000\n"  # a guard: CUDA_VERSION_GUARD's
            "int x;\n"
            "#endif\n"
            "cudaRuntimeGetVersion(&v);\n"
            "int hipVersion() { return HIP_VERSION; }\n")
    assert _lines_of(text, "CUDA_VERSION_VALUE") == [1, 5]
