// Element-wise scale and bias, with an async copy of the result back to the host.
#include "common.cuh"

__global__ void scale_bias_kernel(float* __restrict__ x, float scale, float bias, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * scale + bias;
}

void scale_bias(float* host, int n, float scale, float bias) {
  float* device = nullptr;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  CUDA_CHECK(cudaMalloc(&device, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  dim3 block(256);
  dim3 grid((n + block.x - 1) / block.x);
  scale_bias_kernel<<<grid, block, 0, stream>>>(device, scale, bias, n);
  CUDA_CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFree(device));
  CUDA_CHECK(cudaStreamDestroy(stream));
}
