// SPDX-License-Identifier: Apache-2.0
// Compile once (docs/compile-once.md): this unit includes <rowsoftmax/extern.cuh> and so compiles
// no kernel; the launchers it calls are instantiated in warnings_tu.cu, linked in. Without a GPU
// the calls are still made (bad arguments, refused by the linked launchers) and the GPU tests
// skip, visibly.
#include <rowsoftmax/extern.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "reference.hpp"

namespace {

template <class T>
class CompileOnce : public ::testing::Test {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(CompileOnce, Types);

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace

// Reaches the launchers of the other unit without a device: validation refuses before any CUDA
// call.
TYPED_TEST(CompileOnce, LinkedLaunchersValidate) {
  using T = TypeParam;
  std::size_t bytes = 0;
  rowsoftmax::plan p;
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, nullptr, 4, 8), cudaErrorInvalidValue);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(nullptr, nullptr, nullptr, 4, 8),
            cudaErrorInvalidValue);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, &bytes, nullptr, nullptr, 4, 8),
            cudaErrorInvalidValue);
  EXPECT_EQ(rowsoftmax::softmax_forward_plan<T>(nullptr, 8, nullptr, 8, 4, 8, &p),
            cudaErrorInvalidValue);
  EXPECT_STREQ(rowsoftmax::explain_forward<T>(nullptr, &bytes, nullptr, nullptr, 4, 8),
               "x is null while rows (4) is not 0");
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, nullptr, 0, 8), cudaSuccess);
}

// Forward then backward of a few rows through the linked launchers, against float64.
TYPED_TEST(CompileOnce, ForwardAndBackwardMatchFloat64) {
  using T = TypeParam;
  using D = rowsoftmax::test::dtype<T>;
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  const std::int64_t rows = 3, cols = 1000;
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  rowsoftmax::test::rng r(7);
  std::vector<T> x(n), dy(n), y(n), dx(n);
  for (auto& v : x) v = D::from_double(16 * r.uniform() - 8);
  for (auto& v : dy) v = D::from_double(2 * r.uniform() - 1);
  T *d_x = nullptr, *d_y = nullptr, *d_dy = nullptr, *d_dx = nullptr;
  ASSERT_EQ(cudaMalloc(&d_x, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_y, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_dy, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_dx, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_x, x.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_dy, dy.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(rowsoftmax::softmax_forward(d_x, d_y, rows, cols), cudaSuccess);
  EXPECT_EQ(rowsoftmax::softmax_backward(d_dy, d_y, d_dx, rows, cols), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(y.data(), d_y, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dx.data(), d_dx, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_dy);
  cudaFree(d_dx);

  const double tol = rowsoftmax::test::tolerance<T>::norm;
  std::vector<double> xr(cols), yr(cols), dyr(cols), ygot(cols), dxr(cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    double ey = 0, ny = 0, edx = 0, ndx = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      xr[j] = D::to_double(x[k]);
      dyr[j] = D::to_double(dy[k]);
      ygot[j] = D::to_double(y[k]);
    }
    rowsoftmax::test::reference_forward(xr.data(), yr.data(), cols);
    // Backward from the y the GPU produced, as autograd would.
    rowsoftmax::test::reference_backward(dyr.data(), ygot.data(), dxr.data(), cols);
    double dot_abs = 0;
    for (std::int64_t j = 0; j < cols; ++j) dot_abs += std::fabs(dyr[j] * ygot[j]);
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      ey += std::pow(ygot[j] - yr[j], 2);
      ny += yr[j] * yr[j];
      edx += std::pow(D::to_double(dx[k]) - dxr[j], 2);
      ndx += std::pow(ygot[j] * (std::fabs(dyr[j]) + dot_abs), 2);
    }
    EXPECT_LE(std::sqrt(ey / ny), tol) << "forward, row " << i;
    EXPECT_LE(std::sqrt(edx / ndx), tol) << "backward, row " << i;
  }
}
