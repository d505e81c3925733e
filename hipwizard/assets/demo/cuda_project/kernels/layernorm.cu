// Layer norm with per-row statistics in dynamic shared memory; the lane id comes from PTX.
#include "common.cuh"

__device__ __forceinline__ unsigned ptx_lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__global__ void __launch_bounds__(256, 2)
layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                 const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
  extern __shared__ float stats[];  // [2 * warps]: sums, then sums of squares
  const float* row = x + blockIdx.x * cols;
  float sum = 0.f, sq = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    sum += row[c];
    sq += row[c] * row[c];
  }
  sum = warp_reduce_sum(sum);
  sq = warp_reduce_sum(sq);
  const int warps = blockDim.x / WARP_SIZE;
  if (ptx_lane_id() == 0) {
    stats[warp_id()] = sum;
    stats[warps + warp_id()] = sq;
  }
  __syncthreads();
  // Count the warps that produced a value (all of them, unless the block is partial).
  unsigned active = __ballot_sync(FULL_MASK, threadIdx.x < warps);
  int n_warps = __popc(active);
  float total = 0.f, total_sq = 0.f;
  for (int w = 0; w < n_warps; ++w) {
    total += stats[w];
    total_sq += stats[warps + w];
  }
  const float mean = total / cols;
  const float inv_std = rsqrtf(total_sq / cols - mean * mean + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    y[blockIdx.x * cols + c] = (row[c] - mean) * inv_std * gamma[c] + beta[c];
  }
}

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
               cudaStream_t stream) {
  const int threads = 256;
  const size_t smem = 2 * (threads / WARP_SIZE) * sizeof(float);
  layernorm_kernel<<<rows, threads, smem, stream>>>(x, gamma, beta, y, cols, 1e-5f);
  CUDA_CHECK(cudaGetLastError());
}
