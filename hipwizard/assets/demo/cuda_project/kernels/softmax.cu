// Row softmax over [rows, cols] for float, half and bf16 inputs (one block per row).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "common.cuh"

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }

template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void softmax_kernel(const T* __restrict__ in, float* __restrict__ out, int cols) {
  __shared__ float partial[WARP_SIZE];
  const T* row = in + blockIdx.x * cols;
  float* dst = out + blockIdx.x * cols;

  float local_max = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) local_max = fmaxf(local_max, to_float(row[c]));
  local_max = warp_reduce_max(local_max);
  if (lane_id() == 0) partial[warp_id()] = local_max;
  __syncthreads();
  float row_max = threadIdx.x < blockDim.x / WARP_SIZE ? partial[threadIdx.x] : -INFINITY;
  row_max = warp_reduce_max(row_max);

  float local_sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) local_sum += __expf(to_float(row[c]) - row_max);
  local_sum = warp_reduce_sum(local_sum);
  __syncthreads();
  if (lane_id() == 0) partial[warp_id()] = local_sum;
  __syncthreads();
  float row_sum = threadIdx.x < blockDim.x / WARP_SIZE ? partial[threadIdx.x] : 0.f;
  row_sum = warp_reduce_sum(row_sum);

  for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = __expf(to_float(row[c]) - row_max) / row_sum;
}

void softmax_half(const __half* in, float* out, int rows, int cols, cudaStream_t stream) {
  softmax_kernel<__half><<<rows, 256, 0, stream>>>(in, out, cols);
  CUDA_CHECK(cudaGetLastError());
}

void softmax_bf16(const __nv_bfloat16* in, float* out, int rows, int cols, cudaStream_t stream) {
  softmax_kernel<__nv_bfloat16><<<rows, 256, 0, stream>>>(in, out, cols);
  CUDA_CHECK(cudaGetLastError());
}
