"""Kernel finding and spec drafting on real-shaped kernels: templates, shared memory, streams, dim3 geometry."""

from __future__ import annotations

import json
from pathlib import Path

from hipwizard.parity.kernels.find import find_kernels, find_launches
from hipwizard.parity.kernels.project import draft_tree, load_specs, save_specs, specs_for
from hipwizard.parity.kernels.spec import draft
from hipwizard.parity.kernels.twin import drop_launchers, lift_text, reverse_defines

DEMO = Path(__file__).resolve().parents[3] / "hipwizard" / "assets" / "demo" / "cuda_project"

TEMPLATED = r'''
#include <cuda_runtime.h>
#define TILE 16
inline int host_helper(int x) { return x * 2; }  // not a kernel
__global__ void decl_only(float* x);            // a declaration: not a kernel
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) row_sum(const T* __restrict__ in, T* out, float* stats, int rows, int cols) {
  __shared__ float partial[BLOCK];
  const T* row = in + blockIdx.x * cols;
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += (float)row[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) { out[blockIdx.x] = (T)partial[0]; atomicAdd(&stats[0], partial[0]); }
}
void launch(const float* in, float* out, float* stats, int rows, int cols, cudaStream_t stream) {
  const int threads = 128;
  dim3 block(threads);
  dim3 grid(rows);
  row_sum<float, 128><<<grid, block, 0, stream>>>(in, out, stats, rows, cols);
}
'''


def test_finds_kernels_not_declarations_or_host_functions():
    ks = find_kernels(TEMPLATED, "t.cu")
    assert [k.name for k in ks] == ["row_sum"]
    k = ks[0]
    assert [t.name for t in k.template] == ["T", "BLOCK"]
    assert [(p.name, p.pointer, p.const) for p in k.params][:3] == [("in", True, True), ("out", True, False),
                                                                    ("stats", True, False)]


def test_template_launch_stream_and_dim3_geometry_drafted():
    k = find_kernels(TEMPLATED, "t.cu")[0]
    site = find_launches(TEMPLATED, "t.cu", {"row_sum"})[0]
    assert site.config[3] == "stream"
    spec = draft(k, site)
    assert spec.template_args == ["float", "128"]
    assert spec.block[0] == "(threads)" or "128" in spec.block[0]
    assert spec.grid[0] == "rows"  # the host's rows, passed as the kernel's rows
    roles = {b.name: b.role for b in spec.buffers}
    assert roles == {"in": "in", "out": "out", "stats": "inout"}  # const; plain store; atomicAdd reads too
    ext = {b.name: b.extent for b in spec.buffers}
    assert "rows" in ext["in"] and "cols" in ext["in"]  # blockIdx.x bounded by the grid, c by its guard
    assert "cols" not in ext["out"] and "rows" in ext["out"]
    assert spec.swept == ["rows", "cols"]


def test_demo_kernels_shared_memory_and_template_argument_from_launch():
    files = {f.rel: f for f in draft_tree(DEMO)}
    ln = files["kernels/layernorm.cu"].specs[0]
    assert ln.shared_bytes.replace(" ", "") == "((size_t)(2*(((int)(256))/WARP_SIZE)*sizeof(float)))"  # typed host locals
    assert ln.launch_site == "kernels/layernorm.cu:47"
    assert "rows" in ln.dims and "rows" in ln.swept  # a host name the geometry kept becomes a dimension
    sm = files["kernels/softmax.cu"].specs[0]
    assert sm.template_args == ["__half"]
    assert [b.type for b in sm.buffers] == ["__half", "float"]
    sc = files["kernels/scale.cu"].specs[0]
    assert sc.grid[0].replace(" ", "") == "(n+(256)-1)/(256)"  # dim3 components resolved
    assert [b.role for b in sc.buffers] == ["inout"]


def test_spec_file_keeps_user_edits_on_redraft(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text(TEMPLATED)
    path = tmp_path / "kernels.json"
    files, drafts = specs_for(src, path)
    save_specs(path, files, drafts, src, None)
    doc = json.loads(path.read_text())
    key = "k.cu::row_sum"
    doc["kernels"][key]["spec"]["template_args"] = ["double", "256"]  # the user's edit
    path.write_text(json.dumps(doc))
    (src / "k.cu").write_text(TEMPLATED.replace("int rows, int cols", "int rows, int cols, int pad"))
    files, drafts = specs_for(src, path)
    spec = files[0].specs[0]
    assert spec.template_args == ["double", "256"]  # kept
    assert [s.name for s in spec.scalars] == ["rows", "cols", "pad"]  # the new draft where the user did not edit
    save_specs(path, files, drafts, src, None)
    assert load_specs(path)[key]["draft"]["template_args"] == ["float", "128"]


def test_twin_lifts_device_code_and_drops_launchers():
    lifted = lift_text(drop_launchers(TEMPLATED + "\n__device__ float g(float x) { return expf(x) * 1.5f; }\n"
                                      "int main() { launch(0, 0, 0, 1, 1, 0); return 0; }\n"))
    assert "double acc = 0.;" in lifted and "__shared__ double partial" in lifted
    assert "exp(x) * 1.5;" in lifted
    assert "host function launch left out" in lifted and "host function main left out" in lifted
    assert "inline int host_helper(int x)" in lifted  # host code that launches nothing stays


def test_reverse_defines_prefer_runtime_names():
    text = reverse_defines([("cuMemAlloc_v2", "hipMalloc"), ("cudaMalloc", "hipMalloc"), ("cudaFree", "hipFree"),
                            ("warpSize", "warpSize")])
    assert "#define hipMalloc cudaMalloc" in text and "cuMemAlloc" not in text
    assert "#define hipFree cudaFree" in text and "warpSize" not in text
