// C = A * B with cuBLAS (column-major), used by the attention projection.
#include <cublas_v2.h>

#include "include/common.cuh"

#define CUBLAS_CHECK(call)                                                        \
  do {                                                                            \
    cublasStatus_t st_ = (call);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                           \
      fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)st_, __FILE__, __LINE__); \
      exit(EXIT_FAILURE);                                                         \
    }                                                                             \
  } while (0)

void matmul(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  static cublasHandle_t handle = nullptr;
  if (handle == nullptr) CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  const float alpha = 1.f, beta = 0.f;
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m));
}
