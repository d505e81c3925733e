"""Drafting from the host code as real projects write it (HeCBench, llm.c): dim3 locals in every spelling, locals
declared without a value, a launch inside a host template, long sizes, the project's build flags, the sweep's
innermost dimension."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hipwizard.parity.kernels.driver import driver_source
from hipwizard.parity.kernels.find import find_kernels, find_launches
from hipwizard.parity.kernels.inputs import shapes
from hipwizard.parity.kernels.project import draft_tree
from hipwizard.parity.kernels.run import Toolchain, build, project_flags
from hipwizard.parity.kernels.spec import draft

DEMO = Path(__file__).resolve().parents[3] / "hipwizard" / "assets" / "demo" / "cuda_project"

HOST = r'''
#define BLOCK_SIZE 16
__global__ void fwd(const float* input, float* sums, int hid) {
  int by = blockIdx.y;
  int tx = threadIdx.x;
  if (tx < hid) sums[by * hid + tx] = input[by * BLOCK_SIZE + tx];
}
__global__ void relax(double* u, const double* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) u[i] += f[i];
}
template <typename T>
__global__ void fill(T* out, int size) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < size) out[i] = (T)1;
}
__global__ void tiled(float* out, int OC) {
  int i = blockIdx.x * blockDim.y + threadIdx.y;
  if (i < OC) out[i] = 0.f;
}
struct Net { int input_n, hidden_n; };
int train(Net* net, const float* d_in, float* d_sums) {
  int in, hid, out;
  in = net->input_n;
  hid = net->hidden_n;
  unsigned int num_blocks = in / BLOCK_SIZE;
  dim3 grid(1, num_blocks);
  dim3 threads(BLOCK_SIZE, BLOCK_SIZE);
  fwd<<<grid, threads>>>(d_in, d_sums, hid);
  return out;
}
void run_relax(double* u, const double* f, int n) {
  double t = 0.0;
#ifdef _OPENMP
  t = 1.0;
#endif
  dim3 block1D(BLOCK_SIZE);
  dim3 grid1D((n + BLOCK_SIZE - 1) / BLOCK_SIZE);
  relax<<< dim3(grid1D), dim3(block1D) >>>(u, f, n);
}
template <typename T>
void bench(T* d, int size, int length) {
  dim3 grid(length / size);
  dim3 block(BLOCK_SIZE);
  fill<T><<<grid, block>>>(d, size);
}
void run_tiled(float* out, int OC, int block_size) {
  dim3 block_dim = {4, 8, (unsigned)block_size / 32};
  tiled<<<OC / block_dim.y, block_dim>>>(out, OC);
}
'''


def _specs(text: str) -> dict:
    kernels = find_kernels(text, "h.cu")
    names = {k.name for k in kernels}
    sites = {s.kernel: s for s in reversed(find_launches(text, "h.cu", names))}
    return {k.name: draft(k, sites.get(k.name)) for k in kernels}


def test_dim3_locals_in_every_spelling_give_the_geometry():
    specs = _specs(HOST)
    fwd = specs["fwd"]
    assert fwd.launch_site and fwd.grid == ["1", "((unsigned int)(in / BLOCK_SIZE))", "1"]  # dim3 grid(1, n)
    assert fwd.block == ["BLOCK_SIZE", "BLOCK_SIZE", "1"]
    relax = specs["relax"]  # dim3(block1D) of a dim3 local, after an #endif (a line start, not a ';')
    assert relax.grid[0].replace(" ", "") == "(n+BLOCK_SIZE-1)/BLOCK_SIZE" and relax.block[0] == "BLOCK_SIZE"
    tiled = specs["tiled"]  # dim3 b = {4, 8, ...}: its .y read at the launch
    assert tiled.block == ["4", "8", "(unsigned)block_size / 32"] and "(8)" in tiled.grid[0]


def test_locals_declared_without_a_value_and_read_through_a_pointer_become_dimensions():
    fwd = _specs(HOST)["fwd"]
    assert "in" in fwd.dims and "in" in fwd.swept  # int in, hid, out; in = net->input_n (not substituted)
    assert not any("net" in e for e in [*fwd.grid, *(b.extent for b in fwd.buffers)])


def test_a_host_template_parameter_at_the_launch_drafts_a_number_type():
    fill = _specs(HOST)["fill"]  # fill<T><<<..>>> inside template <typename T> void bench(..)
    assert fill.template_args == ["float"] and not fill.unsupported and fill.buffers[0].type == "float"


def test_the_innermost_swept_dimension_is_the_one_the_grid_does_not_count():
    ln = next(s for f in draft_tree(DEMO) for s in f.specs if s.kernel == "layernorm_kernel")
    assert ln.grid[0] == "rows" and ln.swept[-1] == "cols"  # a block per row: the columns straddle 32/64/128
    assert {d["cols"] for d in shapes(ln)} >= {127, 128, 129, 4099}


def test_a_long_size_keeps_its_type_in_the_driver():
    text = "__global__ void k(float* p, long n) { long i = blockIdx.x; if (i < n) p[i] = 0.f; }\n" \
           "void go(float* p, long n) { k<<<ceil_div(n, (long)256), 256>>>(p, n); }\n"
    spec = _specs(text)["k"]
    src = driver_source([spec], "/x/k.cu", "original")
    assert "const long n = (long)hw_d[0];" in src
    text = "__global__ void k(float* p, size_t n) { size_t i = blockIdx.x; if (i < n) p[i] = 0.f; }\n" \
           "void go(float* p, int OC) { k<<<ceil_div(OC, 256), 256>>>(p, OC); }\n"  # an int host size: int
    assert "const int n = (int)hw_d[0];" in driver_source([_specs(text)["k"]], "/x/k.cu", "original")


def test_project_build_flags_reach_the_driver(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "Makefile").write_text("CFLAGS = -std=c++14 -Ddfloat=float -Iinc\nall:\n\tnvcc $(CFLAGS) k.cu\n")
    src = tmp_path / "b" / "k.cu"
    src.write_text("__global__ void k(dfloat* p, int n) { int i = threadIdx.x; if (i < n) p[i] = 0; }\n")
    flags = project_flags(src, tmp_path)
    assert "-Ddfloat=float" in flags and f"-I{tmp_path / 'b' / 'inc'}" in flags
    assert not any(f.startswith("-std=") for f in flags)  # c++14 would break the driver: its c++17 stays
    assert project_flags(src, tmp_path / "elsewhere") == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not here")
def test_a_type_only_the_makefile_defines_compiles(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n\tnvcc -Ddfloat=double -c k.cu\n")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(dfloat* p, int n) { int i = threadIdx.x; if (i < n) p[i] = 1; }\n"
                   "void go(dfloat* p, int n) { k<<<1, 32>>>(p, n); }\n")
    files = draft_tree(tmp_path)
    spec = files[0].specs[0]
    assert spec.buffers[0].type == "double" and not spec.unsupported  # -Ddfloat=double: a number type
    b = build([spec], src, "original", tmp_path / "w", Toolchain(compile_only=True), [tmp_path])
    assert b.ok, b.log
