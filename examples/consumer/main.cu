// SPDX-License-Identifier: Apache-2.0
// The smallest program using an installed rowsoftmax: softmax of two rows of 5 floats, printed.
// Without a CUDA device it says so in one line and exits 0.
#include <rowsoftmax/rowsoftmax.cuh>

#include <cstdio>

int main() {
  std::printf("rowsoftmax %d.%d.%d\n", ROWSOFTMAX_VERSION_MAJOR, ROWSOFTMAX_VERSION_MINOR,
              ROWSOFTMAX_VERSION_PATCH);
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 0;
  }
  constexpr int rows = 2, cols = 5;
  const float x[rows * cols] = {1, 2, 3, 4, 5, 0, 0, 0, 0, 0};
  float y[rows * cols];
  float *d_x = nullptr, *d_y = nullptr;
  cudaError_t e = cudaMalloc(&d_x, sizeof x);
  if (e == cudaSuccess) e = cudaMalloc(&d_y, sizeof y);
  if (e == cudaSuccess) e = cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    e = rowsoftmax::softmax_forward(d_x, d_y, rows, cols);
    if (e == cudaErrorInvalidValue)  // which argument, and why
      std::printf("softmax_forward: %s\n", rowsoftmax::explain_forward(d_x, d_y, rows, cols));
  }
  if (e == cudaSuccess) e = cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost);
  cudaFree(d_x);
  cudaFree(d_y);
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) std::printf(" %.4f", y[r * cols + c]);
    std::printf("\n");
  }
  return 0;
}
