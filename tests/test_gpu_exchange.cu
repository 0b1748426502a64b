// SPDX-License-Identifier: Apache-2.0
// The exchange's butterfly on the GPU: every lane of a group leaves with the group's total,
// bitwise the same in every lane, equal to the float64 total within rounding, with empty
// (-inf, 0) partials contributing nothing and NaN reaching the sum.
#include <rowsoftmax/extern.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gpu_harness.cuh"

namespace rowsoftmax::test {
namespace {

using detail::partial;

template <class Reduce, int Lanes>
__global__ void butterfly_kernel(partial const* in, partial* out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  out[i] = detail::butterfly<Reduce, Lanes>(in[i]);
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

/// Warps of partials: random ones, some lanes empty, a warp all empty, a warp with a NaN sum,
/// one with a +inf max, one with maxima of 1e30.
std::vector<partial> partials(int warps) {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 g(20261130);
  std::uniform_real_distribution<float> m(-50.0f, 50.0f), s(0.5f, 2.0f), u(0.0f, 1.0f);
  std::vector<partial> p(static_cast<std::size_t>(warps) * 32);
  for (auto& q : p) q = u(g) < 0.2f ? partial{-inf, 0.0f} : partial{m(g), s(g)};
  for (int l = 0; l < 32; ++l) p[32 + l] = {-inf, 0.0f};
  p[64 + 5].s = std::numeric_limits<float>::quiet_NaN();
  p[96 + 17].m = inf;
  for (int l = 0; l < 32; ++l) p[128 + l].m = 1e30f - static_cast<float>(l) * 1e24f;
  return p;
}

template <class Reduce, int Lanes>
void check_butterfly() {
  ROWSOFTMAX_REQUIRE_GPU();
  const int warps = 16;
  const std::vector<partial> in = partials(warps);
  device_buffer<partial> din(in.size()), dout(in.size());
  ASSERT_NE(din.ptr, nullptr);
  ASSERT_NE(dout.ptr, nullptr);
  ROWSOFTMAX_CUDA_OK(
      cudaMemcpy(din.ptr, in.data(), in.size() * sizeof(partial), cudaMemcpyHostToDevice));
  butterfly_kernel<Reduce, Lanes><<<warps, 32>>>(din.ptr, dout.ptr);
  ROWSOFTMAX_CUDA_OK(cudaGetLastError());
  std::vector<partial> out(in.size());
  ROWSOFTMAX_CUDA_OK(
      cudaMemcpy(out.data(), dout.ptr, out.size() * sizeof(partial), cudaMemcpyDeviceToHost));
  for (std::size_t g = 0; g < in.size(); g += Lanes) {
    SCOPED_TRACE("lanes " + std::to_string(g) + ".." + std::to_string(g + Lanes - 1));
    for (std::size_t l = g + 1; l < g + Lanes; ++l) {
      EXPECT_TRUE(same_bits(out[l].m, out[g].m)) << l;
      EXPECT_TRUE(same_bits(out[l].s, out[g].s)) << l;
    }
    double total = 0, max = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (std::size_t l = g; l < g + Lanes; ++l) max = std::fmax(max, in[l].m);
    for (std::size_t l = g; l < g + Lanes; ++l) {
      if (std::is_same_v<Reduce, detail::sum_reduce>) {
        total += in[l].s;
      } else if (in[l].m != -std::numeric_limits<float>::infinity()) {
        const double e = std::exp(static_cast<double>(in[l].m) - max);  // NaN for inf - inf
        total += in[l].s * e;
      }
      nan = nan || std::isnan(in[l].s);
    }
    if (std::is_same_v<Reduce, detail::online_reduce>) EXPECT_EQ(out[g].m, max);
    if (nan || std::isnan(total)) {
      EXPECT_TRUE(std::isnan(out[g].s));
    } else if (total == 0) {
      EXPECT_EQ(out[g].s, 0.0f);  // only empty partials: exactly (-inf, 0)
    } else {
      EXPECT_NEAR(out[g].s, total, 1e-5 * std::fabs(total));
    }
  }
}

TEST(Butterfly, OnlineWarpEveryLaneTheSameTotal) {
  check_butterfly<detail::online_reduce, 32>();
}
TEST(Butterfly, OnlineEightLanesEveryLaneTheSameTotal) {
  check_butterfly<detail::online_reduce, 8>();
}
TEST(Butterfly, SumWarpEveryLaneTheSameTotal) {
  check_butterfly<detail::sum_reduce, 32>();
}

}  // namespace
}  // namespace rowsoftmax::test
