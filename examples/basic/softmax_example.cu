// SPDX-License-Identifier: Apache-2.0
// Softmax of a few rows on the GPU, checked on the CPU.
#include <rowsoftmax/rowsoftmax.cuh>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to run\n");
    return 0;
  }
  const std::int64_t rows = 4, cols = 1000;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) * 6.0f;

  float *dx = nullptr, *dy = nullptr;
  cudaMalloc(&dx, x.size() * sizeof(float));
  cudaMalloc(&dy, x.size() * sizeof(float));
  cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);

  rowsoftmax::plan plan;
  rowsoftmax::softmax_forward_plan<float>(dx, cols, dy, cols, rows, cols, &plan);
  std::printf("plan: %s\n", rowsoftmax::to_string(plan).c_str());

  // The whole API: one call, asynchronous on the given stream, returns cudaError_t.
  cudaError_t err = rowsoftmax::softmax_forward<float>(dx, dy, rows, cols, /*stream=*/nullptr);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("softmax_forward failed: %s\n", cudaGetErrorString(err));
    return 1;
  }
  std::vector<float> y(x.size());
  cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);

  double worst = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0, sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) m = std::fmax(m, x[r * cols + j]);
    for (std::int64_t j = 0; j < cols; ++j) s += std::exp(double(x[r * cols + j]) - m);
    for (std::int64_t j = 0; j < cols; ++j) {
      const double ref = std::exp(double(x[r * cols + j]) - m) / s;
      worst = std::fmax(worst, std::fabs(y[r * cols + j] - ref) / ref);
      sum += y[r * cols + j];
    }
    std::printf("row %lld: sum %.7f\n", static_cast<long long>(r), sum);
  }
  std::printf("max relative error vs float64: %.3g\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
