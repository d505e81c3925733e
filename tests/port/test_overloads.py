"""CUDA's C++ overloads and default arguments mapped to the HIP call that takes them (issue 29 item 5), and the
--roc / header / symbol rules that put the built-in backend at or above hipify-perl on HIPIFY's tests (item 6)."""

from __future__ import annotations

import sys
from pathlib import Path

from hipwizard.port.translation.builtin import TranslateOptions, translate_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from hipify_accuracy import load_corpus, score  # noqa: E402

ROC = TranslateOptions(roc=True)


def _unsupported(t) -> dict[str, str]:
    return {d.name: d.message for d in t.diagnostics if d.kind == "unsupported"}


def test_event_create_with_flags_is_hip_event_create_with_flags():
    t = translate_text("void f(){ cudaEvent_t a, b;\n cudaEventCreate(&a, cudaEventDisableTiming);\n"
                       " cudaEventCreate(&b);\n}\n")
    assert "hipEventCreateWithFlags(&a, hipEventDisableTiming);" in t.text
    assert "hipEventCreate(&b);" in t.text  # the one-argument call is HIP's own
    assert t.stats["overloads"] == 1


def test_overload_counts_only_top_level_arguments():
    t = translate_text("void f(){ cudaEventCreate(&ev[g(1, 2)]); }\n")
    assert "hipEventCreate(&ev[g(1, 2)])" in t.text


def test_malloc_async_from_pool_and_graph_instantiate_forms():
    t = translate_text("void f(){ cudaMallocAsync(&p, n, pool, s); cudaMallocAsync(&q, n, s);\n"
                       " cudaGraphInstantiate(&e, g, 0);\n cudaGraphInstantiate(&e, g);\n"
                       " cudaGraphInstantiate(&e, g, &node, log, 64);\n}\n")
    assert "hipMallocFromPoolAsync(&p, n, pool, s)" in t.text
    assert "hipMallocAsync(&q, n, s)" in t.text
    assert "hipGraphInstantiateWithFlags(&e, g, 0);" in t.text
    assert "hipGraphInstantiate(&e, g, nullptr, nullptr, 0);" in t.text
    assert "hipGraphInstantiate(&e, g, &node, log, 64);" in t.text


def test_symbol_async_copies_get_hips_required_offset_and_kind():
    t = translate_text("__constant__ float c[4];\nvoid f(float* h, cudaStream_t s){\n"
                       " cudaMemcpyToSymbolAsync(c, h, 16);\n cudaMemcpyFromSymbolAsync(h, c, 16, 4);\n"
                       " cudaMemcpyToSymbolAsync(c, h, 16, 0, cudaMemcpyHostToDevice, s);\n}\n")
    assert "hipMemcpyToSymbolAsync(HIP_SYMBOL(c), h, 16, 0, hipMemcpyHostToDevice);" in t.text
    assert "hipMemcpyFromSymbolAsync(h, HIP_SYMBOL(c), 16, 4, hipMemcpyDeviceToHost);" in t.text
    assert "hipMemcpyToSymbolAsync(HIP_SYMBOL(c), h, 16, 0, hipMemcpyHostToDevice, s);" in t.text


def test_malloc_host_with_flags_and_managed_default():
    t = translate_text("void f(){ cudaMallocHost(&p, n, cudaHostAllocMapped); cudaMallocManaged(&m, n); }\n")
    assert "hipHostMalloc(&p, n, hipHostMallocMapped)" in t.text
    assert "hipMallocManaged(&m, n)" in t.text  # HIP has the default flags too


def test_launch_kernel_ex_template_is_reported_with_the_rewrite():
    t = translate_text("void f(){ cudaLaunchKernelEx(&cfg, k, a, b); }\n")
    msg = _unsupported(t)["cudaLaunchKernelEx"]
    assert "hipLaunchKernelGGL" in msg and "hipLaunchKernelExC" in msg
    assert t.stats["unsupported"] == 1


def test_driver_occupancy_callback_dropped_only_when_null():
    t = translate_text("void f(){ cuOccupancyMaxPotentialBlockSize(&g, &b, fn, 0, bytes, 256); }\n")
    assert "hipModuleOccupancyMaxPotentialBlockSize(&g, &b, fn, bytes, 256);" in t.text
    t2 = translate_text("void f(){ cuOccupancyMaxPotentialBlockSize(&g, &b, fn, smem_of, bytes, 256); }\n")
    assert "smem_of" in t2.text
    assert "callback" in _unsupported(t2)["cuOccupancyMaxPotentialBlockSize"]


def test_graph_symbol_nodes_wrap_the_symbol():
    t = translate_text("void f(){ cudaGraphAddMemcpyNodeToSymbol(&n, g, d, 1, sym, src, 4, 0, k); }\n")
    assert "hipGraphAddMemcpyNodeToSymbol(&n, g, d, 1, HIP_SYMBOL(sym), src, 4, 0, k)" in t.text


def test_roc_value_types_in_a_rocblas_file():
    src = "#include <cublas_v2.h>\nvoid f(){ cuComplex a; cuDoubleComplex b; __half* h; cublasCreate(0); }\n"
    t = translate_text(src, ROC)
    assert "rocblas_float_complex a; rocblas_double_complex b; rocblas_half* h;" in t.text
    kernel = translate_text(src + "__global__ void k(__half* x){}\n", ROC)
    assert "rocblas_half" not in kernel.text  # a kernel's __half keeps HIP's type
    assert "rocblas_float_complex" in kernel.text
    plain = translate_text("void f(){ cuComplex a; }\n", ROC)  # no rocBLAS call: HIP's complex type
    assert "hipComplex a;" in plain.text


def test_roc_rand_headers_kept_apart_and_duplicates_dropped():
    src = ("#include <curand.h>\n#include <curand_kernel.h>\n#include <curand_discrete.h>\n"
           "#include <curand_discrete2.h>\n#include <curand_normal.h>\n")
    t = translate_text(src, ROC)
    assert t.text.splitlines() == ["#include <rocrand/rocrand.h>", "#include <rocrand/rocrand_kernel.h>",
                                   "#include <rocrand/rocrand_discrete.h>", "#include <rocrand/rocrand_normal.h>"]
    hip = translate_text(src)
    assert hip.text.count("hiprand/hiprand_kernel.h") == 1  # one HIP header for the group


def test_filecheck_style_score_and_folder_headers():
    assert score("  HIPBLAS_OP_T, /* transa */\n", ["HIPBLAS_OP_T,"]) == [True]
    assert score('#include "hipblas/hipblas.h"\n', ['#include "hipblas.h"']) == [False]
    assert score('#include "hipblas/hipblas.h"\n', ['#include "hipblas.h"'], folder_headers=True) == [True]


def test_lit_run_line_options_and_folders(tmp_path):
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "a.cu").write_text('// RUN: %run_test hipify "%s" "%t" %hipify_args 1 --roc %clang_args\n'
                                            "// CHECK: rocblas_float_complex c;\ncuComplex c;\n")
    (tmp_path / "b.cu").write_text("int x;\n")  # no CHECK: not a case
    cases = load_corpus(tmp_path)
    assert [(c.name, c.options.roc) for c in cases] == [("libs/a.cu", True)]


def test_cooperative_groups_sub_headers_are_unsupported():
    # llm.c's dev/cuda/*.cu include <cooperative_groups/reduce.h>: hipcc stops there (HIP has one cg header)
    t = translate_text("#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n")
    assert "#include <hip/hip_cooperative_groups.h>" in t.text
    msg = _unsupported(t)["cooperative_groups/reduce.h"]
    assert "hip/hip_cooperative_groups.h" in msg and "hipCUB" in msg
    assert t.diagnostics[0].line == 2
