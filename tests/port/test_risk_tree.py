"""Warp-size facts that cross files (hipwizard/port/risk/flow.py, risk_tree.py): a kernel sized by a 32-wide warp
flags its head and launches, in its own file and in the folder's other files; a constant defined from 32 in a
header flags its uses in a .cu beside it (after HeCBench f27000a5 src/gemv-hip, src/softmax-online-hip)."""

from __future__ import annotations

from hipwizard.port.risk.flags import code_lines
from hipwizard.port.risk.flow import enclosing_function, warp_functions
from hipwizard.port.translation.engine import port_tree

KERNELS = """#pragma once
#define WARP_SIZE 32

template <typename T>
__device__ T warp_sum(T v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down(v, o);
  return v;
}

__global__ void scale(float* x, float a) {
  x[threadIdx.x] *= a;
}
"""
MAIN = """#include <cuda_runtime.h>
#include "kernels.h"

__global__ void reduce(const float* x, float* y) {
  float v = warp_sum<float>(x[threadIdx.x]);
  if (threadIdx.x == 0) y[blockIdx.x] = v;
}

__global__ void tile(float* x) {
  __shared__ float s[WARP_SIZE * 4];
  s[threadIdx.x] = x[threadIdx.x];
}

int main() {
  float *x, *y;
  cudaMalloc(&x, 1024);
  cudaMalloc(&y, 1024);
  dim3 block(WARP_SIZE * 4);
  reduce<<<8, block>>>(x, y);
  scale<<<8, 256>>>(x, 2.f);
  tile<<<8, 128>>>(x);
  return 0;
}
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, x in enumerate(text.split("\n"), 1) if needle in x)


def test_the_enclosing_function_and_the_warp_sized_ones():
    lines = code_lines(KERNELS)
    assert enclosing_function(lines, _line(KERNELS, "__shfl_down") - 1) == ("warp_sum", _line(KERNELS, "template") - 1)
    assert enclosing_function(lines, 1) is None  # file scope
    assert set(warp_functions(lines)) == {"warp_sum"}  # scale sizes nothing by a warp


def _flags(ft) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for h in ft.hunks:
        for f in h.flags:
            out.setdefault(f.line, set()).add(f.rule_id)
    for f in ft.untouched_flags:
        out.setdefault(f.line, set()).add(f.rule_id)
    return out


def test_facts_of_a_header_are_flagged_in_the_cu_beside_it(tmp_path):
    (tmp_path / "kernels.h").write_text(KERNELS)
    (tmp_path / "main.cu").write_text(MAIN)
    (tmp_path / "other").mkdir()  # another folder sees nothing of this one
    (tmp_path / "other" / "main.cu").write_text(MAIN.replace('#include "kernels.h"\n', ""))
    files = {ft.path: ft for ft in port_tree(tmp_path, backend="builtin").files}
    main = files["main.cu"]
    flags = _flags(main)
    text = main.translated
    # the call of the header's warp-sized helper; a kernel the header's constant sizes: its head and its launch
    assert "WARP_KERNEL_USE" in flags[_line(text, "warp_sum<float>")]
    assert "WARP_KERNEL_USE" in flags[_line(text, "__global__ void tile")]
    assert "WARP_KERNEL_USE" in flags[_line(text, "tile<<<")]
    # the foreign constant's uses are flagged where it sizes something (issue 29: llm.c's WARP_SIZE)
    assert "WARP32_CONST_USE" in flags[_line(text, "dim3 block(WARP_SIZE")]
    assert "WARP_KERNEL_USE" not in flags.get(_line(text, "scale<<<"), set())
    other = _flags(files["other/main.cu"])
    assert not {"WARP32_CONST_USE", "WARP_KERNEL_USE"} & set().union(*other.values())  # no warp flag on any line
    # the header's own helper: its head flagged by the per-file rule
    kflags = _flags(files["kernels.h"])
    assert "WARP_KERNEL_USE" in kflags[_line(files["kernels.h"].translated, "template <typename T>")]


BLOCK_REDUCE = """template <typename T>
__inline__ __device__ T warpReduceSum(T val) {
  for (int mask = 16; mask > 0; mask >>= 1) val += __shfl_xor_sync(0xffffffff, val, mask, 32);
  return val;
}

template <typename T>
__inline__ __device__ T blockReduceSum(T val) {
  static __shared__ T shared[32];
  val = warpReduceSum<T>(val);
  return val;
}

__device__ int first_lanes() {
  return threadIdx.x < 32;
}

template <typename T>
__global__ void norm(T* out) {
  float m = blockReduceSum<float>(out[threadIdx.x]);
  out[threadIdx.x] = m;
}

__global__ void mark(int* out) {
  out[threadIdx.x] = first_lanes();
}
"""


def test_callers_of_a_warp_reduction_are_warp_sized_too():
    # addBiasResidualLayerNorm-hip: the warp reduction, the block reduction on it and the kernel calling that
    # all get a warp-size parameter; '__inline__ __device__' heads are function heads
    lines = code_lines(BLOCK_REDUCE)
    found = warp_functions(lines)
    assert {"warpReduceSum", "blockReduceSum", "norm"} <= set(found)
    assert found["norm"] == _line(BLOCK_REDUCE, "__global__ void norm") - 2  # its template line
    # a helper that only reads lanes (no shuffle) does not spread to its callers
    assert "first_lanes" in found and "mark" not in found


def test_warp_constant_followed_through_includes_from_the_root(tmp_path):
    # llm.c's shape: llmc/common.h defines it, llmc/matmul.cuh includes it beside it, train.cu (root) includes
    # llmc/matmul.cuh by a root-relative path, and tools/bench.cu includes "../llmc/matmul.cuh": every user is flagged
    (tmp_path / "llmc").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "llmc" / "common.h").write_text("#include <cuda_runtime.h>\n#define WARP_SIZE 32U\n")
    (tmp_path / "llmc" / "matmul.cuh").write_text('#include "common.h"\n__global__ void k(float* x) {}\n'
                                                  "void go(int bs) {\n  dim3 block_dim = {4, 8, (unsigned)bs/WARP_SIZE};\n}\n")
    use = "__global__ void m(float* x) {}\nvoid run(int n) {\n  m<<<n / WARP_SIZE, 256>>>(0);\n}\n"
    (tmp_path / "train.cu").write_text('#include "llmc/matmul.cuh"\n' + use)
    (tmp_path / "tools" / "bench.cu").write_text('#include "../llmc/matmul.cuh"\n' + use)
    (tmp_path / "tools" / "alone.cu").write_text(use)  # sees nothing of llmc/: its WARP_SIZE is not that one
    files = {ft.path: ft for ft in port_tree(tmp_path, backend="builtin").files}
    for path, needle in (("llmc/matmul.cuh", "block_dim"), ("train.cu", "m<<<"), ("tools/bench.cu", "m<<<")):
        ft = files[path]
        assert "WARP32_CONST_USE" in _flags(ft).get(_line(ft.translated, needle), set()), path
    alone = _flags(files["tools/alone.cu"])
    assert not any("WARP32_CONST_USE" in rules for rules in alone.values())
