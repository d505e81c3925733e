"""Every risk rule: one snippet it must flag, one it must not (and never inside comments or strings)."""

from __future__ import annotations

import pytest

from hipwizard.port.risk.flags import find_risks
from hipwizard.port.risk.rules import RULES, RULES_BY_ID

# rule id -> (code that must be flagged, similar code that must not be)
CASES: dict[str, tuple[str, str]] = {
    "WARP32_LITERAL": ("#define WARP_SIZE 32", "#define BLOCK_SIZE 32"),
    "LANE_MASK_31": ("int lane = threadIdx.x & 31;", "int lane = threadIdx.x % warpSize;"),
    "SHFL_LOOP_16": ("for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down(v, offset);",
                     "for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);"),
    "FULL_MASK_32": ("v = __shfl_xor_sync(0xffffffff, v, 1);", "v = __shfl_xor_sync(0xffffffffffffffffull, v, 1);"),
    "SYNC_WARP_BUILTINS": ("v += __shfl_down_sync(mask, v, 4);", "v += __shfl_down(v, 4);"),
    "BALLOT_32BIT": ("unsigned int m = __ballot_sync(mask, pred);", "unsigned long long m = __ballot(pred);"),
    "POPC_FFS_MASK": ("int n = __popc(mask);", "int n = __popcll(mask);"),
    "LANE_SHIFT_1U": ("unsigned bit = 1u << lane_id;", "unsigned long long bit = 1ull << lane_id;"),
    "WARPSIZE_CONSTEXPR": ("__shared__ float buf[warpSize];", "__shared__ float buf[64];"),
    "SYNCWARP_ITS": ("__syncwarp();", "__syncthreads();"),
    "TEMPLATE_SPECIALIZATION": ("template <>\n__device__ float cvt<__half>(__half v) { return __half2float(v); }",
                                "template <typename T>\n__device__ float cvt(T v) { return float(v); }"),
    "INLINE_PTX": ('asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));', "lane = __lane_id();"),
    "HOPPER_ASYNC": ("__pipeline_memcpy_async(dst, src, 16);", "memcpy(dst, src, 16);"),
    "WMMA_MMA": ("#include <mma.h>\nwmma::fragment<wmma::matrix_a, 16, 16, 16, half> a;", "#include <math.h>"),
    "CUTLASS_CUTE": ('#include "cutlass/gemm/device/gemm.h"', '#include "gemm.h"'),
    "CUDA_ARCH_GATE": ("#if __CUDA_ARCH__ >= 800", "#if __HIP_DEVICE_COMPILE__"),
    "BF16_TYPES": ("__nv_bfloat16 x = __float2bfloat16(1.f);", "float x = 1.f;"),
    "FP8_TYPES": ("__nv_fp8_e4m3 q = __nv_fp8_e4m3(x);", "int8_t q = (int8_t)x;"),
    "HALF2_XY": ("__half2 h;\nfloat a = __half2float(h.x);", "float2 f;\nfloat a = f.x;"),
    "DYN_SMEM_GT_64K": ("cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 98304);",
                        "__shared__ float tile[64][64];"),
    "LAUNCH_BOUNDS_2ARG": ("__global__ void __launch_bounds__(256, 2) k() {}", "__global__ void __launch_bounds__(256) k() {}"),
    "EXTERN_SHARED": ("extern __shared__ float smem[];", "__shared__ float smem[256];"),
    "CACHE_HINT_INTRINSICS": ("float v = __ldcs(ptr);", "float v = ptr[0];"),
    "TEXTURE_REF": ("texture<float, 1, cudaReadModeElementType> tex;", "cudaTextureObject_t tex;"),
    "TRAP_PRINTF": ("if (bad) __trap();", "if (bad) return;"),
    "COOP_GROUPS_ADV": ("float s = cg::reduce(tile, v, cg::plus<float>());", "cg::thread_block b = cg::this_thread_block();"),
    "CUB_THRUST": ("#include <cub/block/block_reduce.cuh>", "#include <cub/cub.cuh>"),
    "CUBLASLT": ("cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);", "cublasSgemm(h, a, b);"),
    "NVTX": ('nvtxRangePushA("fwd");', 'printf("fwd");'),
    "GRAPH_CAPTURE": ("cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);", "cudaStreamSynchronize(s);"),
    "DRIVER_JIT": ("nvrtcCreateProgram(&prog, src, \"k.cu\", 0, nullptr, nullptr);", "compile(&prog, src);"),
    # HeCBench's michalewicz, mdh (helper_math.h) and tpacf: hipcc 5.2 errors no other flag was near
    "HIP_HAS_ATOMIC": ("__device__ __forceinline__\nfloat atomicMin(float *addr, float value)\n{",
                       "__device__ float atomicMinF(float *addr, float value)\n{\n  atomicMin(p, 1.0f);"),
    "HIP_VECTOR_OPERATOR": ("inline __host__ __device__ void operator+=(float4 &a, float4 b)",
                            "inline __host__ __device__ float dot(float4 a, float4 b)\nstruct V { V& operator+=(const V&); };"),
    "DIM3_FROM_UINT3": ("dim3 grid(n, 1, 1), threads(256);\ngrid = make_uint3(MAXB, 1, 1);",
                        "dim3 grid(n, 1, 1);\nuint3 u;\nu = make_uint3(1, 2, 3);\ngrid = dim3(MAXB, 1, 1);"),
    # issue 15: host plumbing and library rules (snippets after HeCBench's in-sample ports, f27000a5)
    "WARP32_CONST_USE": ("#define WS 32\nk<<<grid, WS * 4>>>(x);", "#define BS 32\nk<<<grid, BS * 4>>>(x);"),
    "COMPUTE_CAPABILITY": ("if (prop.major >= 7) use_tc = true;", "if (prop.totalGlobalMem > need) ok = true;"),
    "CUDA_VERSION_GUARD": ("#if CUDA_VERSION >= 11000", "#if HIP_VERSION >= 60000000"),
    "GRID_CONSTANT": ("__global__ void k(const __grid_constant__ Params p) {}", "__global__ void k(const Params p) {}"),
    "HIPBLAS_TYPES": ("cublasGemmEx(h, ta, tb, m, n, k, &a, A, CUDA_R_16F, m, B, CUDA_R_16F, k, &b, C, CUDA_R_16F, m, "
                      "CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);", "cublasSgemm(h, ta, tb, m, n, k, &a, A, m, B, k, &b, C, m);"),
    "NCCL_RCCL": ("#include <nccl.h>", "#include <mpi.h>"),
    "OCCUPANCY_SM": ("int blocks = prop.maxThreadsPerMultiProcessor * prop.multiProcessorCount / 256;",
                     "int blocks = (n + 255) / 256;"),
    "TENSOR_CORE_HELPER": ('__device__ void mma_16x8(float* d, unsigned* a) {\n  asm volatile("mma.sync.aligned.m16n8k16" '
                           ': "=f"(d[0]) : "r"(a[0]));\n}\n__global__ void k(float* d, unsigned* a) {\n  mma_16x8(d, a);\n}',
                           "__device__ float add(float a, float b) { return a + b; }\n__global__ void k(float* d) { "
                           "d[0] = add(d[0], 1.f); }"),
    "SHFL_SHIM": ("#define SHFL_DOWN(v, o) __shfl_down_sync(0xffffffff, v, o)", "#define MAX(a, b) ((a) > (b) ? (a) : (b))"),
    "CLOCK_RATE": ("float ghz = prop.clockRate * 1e-6f;", "float gb = prop.totalGlobalMem * 1e-9f;"),
    "LIBRARY_LEFTOVER": ("printf(\"%s\", cublasGetStatusString(st));\nhipblasDotEx_v2(h, n, x, t, 1, y, t, 1, r, t, t);\n"
                         "cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, 5, dims, strides);",
                         "printf(\"%s\", hipblasStatusToString(st));\nhipblasDotEx(h, n, x, t, 1, y, t, 1, r, t, t);"),
    "CUB_FUNCTOR": ("struct Max\n{\n  template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; }\n};\n"
                    "float m = BlockReduce(tmp).Reduce(v, Max());",
                    "float m = BlockReduce(tmp).Reduce(v, hipcub::Max());"),
    "HELPER_MATH": ('#include "helper_math.h"', '#include "helper_cuda.h"'),
    "HALF_ATOMIC": ("__global__ void k(__half2* out, __half2 v) {\n  atomicAdd(&out[0], v);\n  "
                    "atomicAdd((half2*)&out[1], v);\n}",
                    "__global__ void k(float* out, float v) {\n  atomicAdd(&out[0], v);\n}"),
    "LIBRARY_HEADER": ("#include <cublas_v2.h>\n#include <cusparse.h>\n#include <hipsolver/hipsolver.h>",
                       "#include <cuda_runtime.h>\n#include <hip/hip_runtime.h>\n#include <vector>"),
    # hipsparseGetErrorString: ROCm >= 6.0 (HIPIFY's tables); cusparseCreate's counterpart is old
    "RECENT_HIP_API": ('printf("%s", cusparseGetErrorString(st));', "cusparseCreate(&handle);"),
    # after HeCBench f27000a5 src/gemv-hip: the kernel gains a warp-size template parameter, its launch a choice
    "WARP_KERNEL_USE": ("__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
                        "  for (int o = 16; o > 0; o /= 2) v += __shfl_down(v, o);\n  x[0] = v;\n}\n"
                        "void run(float* x) {\n  k<<<1, 256>>>(x);\n}",
                        "__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
                        "  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);\n  x[0] = v;\n}\n"
                        "void run(float* x) {\n  k<<<1, 256>>>(x);\n}"),
    # issue 32, learned where dual-target projects diverge (FBGEMM's ROCm grid-stride loops, jaxlib's kDLROCM)
    "GRID_32BIT_THREADS": ("__global__ void k(float* y, int64_t n) {\n  const auto i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (i >= n) {\n    return;\n  }\n  y[i] = 0;\n}",
                           "__global__ void k(float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (i >= n) return;\n  y[i] = 0;\n}"),
    "SMEM_OPTIN_QUERY": ("cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);",
                         "cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, dev);"),
    "DLPACK_DEVICE": ("DLDevice d{kDLCUDA, 0};", "DLDevice d{kDLROCM, 0};"),
    "CUB_WARP_THREADS": ("#define WARP_THREADS CUB_WARP_THREADS(0)", "#define WARP_THREADS warpSize"),
    "FP8_OCP_DTYPE": ("using fp8_e4m3_t = at::Float8_e4m3fn;", "using fp8_e4m3_t = at::Float8_e4m3fnuz;"),
    # an alias of a cuDNN call MIOpen lacks, used; an alias of a call HIP has is translated, not a risk
    "VENDOR_ALIAS": ("#define gpudnnRNNForward cudnnRNNForward\nvoid f() { gpudnnRNNForward(h, d); }",
                     "#define gpuMalloc cudaMalloc\nvoid f() { gpuMalloc(&p, 4); }"),
    # apex's groupbn (issue 32, fourth pass): HIP-Clang needs ::template where nvcc does not
    "DEPENDENT_TEMPLATE_CALL": ("template <int THREADS, int N>\n__device__ void k(float* s) {\n"
                                "  Sums<THREADS, N>::dispatch<256>(s);\n}",
                                "template <int THREADS, int N>\n__device__ void k(float* s) {\n"
                                "  Sums<THREADS, N>::template dispatch<256>(s);\n}"),
    "CUDNN_MIOPEN": ("status = cudnnCreateTensorDescriptor(&desc);", "status = miopenCreateTensorDescriptor(&desc);"),
    "CUDA_VERSION_VALUE": ("int v() { return CUDART_VERSION; }", "int v() { return HIP_VERSION; }"),
}


def _ids(text: str) -> set[str]:
    return {f.rule.rule_id for f in find_risks(text)}


def test_catalogue_has_every_porting_risk_with_reason_hint_and_source():
    assert len(RULES) == 60 and set(CASES) == set(RULES_BY_ID)
    for rule in RULES:
        assert rule.severity in ("high", "med", "low")
        assert rule.reason and rule.hint and rule.source


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_flags_its_pattern(rule_id):
    positive, negative = CASES[rule_id]
    assert rule_id in _ids(positive)
    assert rule_id not in _ids(negative)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_ignores_comments_and_strings(rule_id):
    positive, _ = CASES[rule_id]
    if positive.lstrip().startswith("#include"):
        pytest.skip("include lines are code even when written with quotes")
    commented = "\n".join(f"// {line}" for line in positive.splitlines())
    block = "/* " + positive.replace("*/", "") + " */"
    quoted = "const char* s = " + " ".join(f'"{line.replace(chr(34), "")}"' for line in positive.splitlines()) + ";"
    for text in (commented, block, quoted):
        assert rule_id not in _ids(text), text


def test_finding_points_at_the_line():
    text = "int a;\n\nint lane = threadIdx.x & 31;\n"
    assert [(f.rule.rule_id, f.line) for f in find_risks(text)] == [("LANE_MASK_31", 3)]


def test_the_last_lane_by_number_is_a_warp_literal():
    # HeCBench f27000a5 src/mpc-hip: 'lane == 31' -> 'lane == warpSize - 1', '(lane + dim) > 31' likewise
    assert "WARP32_LITERAL" in _ids("if (lane == 31) sbuf[warp] = val;")
    assert "WARP32_LITERAL" in _ids("if ((lane + dim) > 31) sbuf[tix] = val;")
    assert "WARP32_LITERAL" not in _ids("if (lane == warpSize - 1) sbuf[warp] = val;")
    assert "WARP32_LITERAL" not in _ids("if (day == 31) month++;")


def test_a_cudnn_call_without_a_miopen_counterpart_is_a_leftover_and_one_with_is_not():
    text = "cudnnCreate(&h);\ncudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, 5, dims, strides);\ncudnnDestroy(h);\n"
    assert [(f.rule.rule_id, f.line) for f in find_risks(text) if f.rule.rule_id == "LIBRARY_LEFTOVER"] == \
        [("LIBRARY_LEFTOVER", 2)]
