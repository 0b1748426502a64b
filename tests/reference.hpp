// SPDX-License-Identifier: Apache-2.0
// The float64 CPU reference, seeded random data and per-dtype tolerances shared by the tests.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace rowsoftmax::test {

/// Softmax of one row in float64 with torch.softmax's special-value rules: a NaN or +inf
/// anywhere, or a row of only -inf, makes the whole row NaN; other -inf elements give 0.
inline void reference_forward(double const* x, double* y, std::int64_t cols) {
  double m = -std::numeric_limits<double>::infinity();
  bool nan = false;
  for (std::int64_t j = 0; j < cols; ++j) {
    nan = nan || std::isnan(x[j]);
    if (x[j] > m) m = x[j];
  }
  if (nan || std::isinf(m)) {
    for (std::int64_t j = 0; j < cols; ++j) y[j] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  double s = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) s += std::exp(x[j] - m);
  for (std::int64_t j = 0; j < cols; ++j) y[j] = std::exp(x[j] - m) / s;
}

/// dx = y * (dy - sum(dy * y)) for one row, in float64.
inline void reference_backward(double const* dy, double const* y, double* dx, std::int64_t cols) {
  double dot = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) dot += dy[j] * y[j];
  for (std::int64_t j = 0; j < cols; ++j) dx[j] = y[j] * (dy[j] - dot);
}

/// splitmix64: fast, seeded, the same stream on every machine.
struct rng {
  std::uint64_t state;
  explicit rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::int64_t below(std::int64_t n) {
    return static_cast<std::int64_t>(next() % std::uint64_t(n));
  }
};

template <class T>
struct dtype;
template <>
struct dtype<float> {
  static constexpr const char* name = "float";
  static constexpr double unit_roundoff = 0x1.0p-24;
  static constexpr double huge = 3.0e38;
  static float from_double(double v) { return static_cast<float>(v); }
  static double to_double(float v) { return v; }
};
template <>
struct dtype<__half> {
  static constexpr const char* name = "half";
  static constexpr double unit_roundoff = 0x1.0p-11;
  static constexpr double huge = 65000.0;
  static __half from_double(double v) { return __float2half_rn(static_cast<float>(v)); }
  static double to_double(__half v) { return __half2float(v); }
};
template <>
struct dtype<__nv_bfloat16> {
  static constexpr const char* name = "bfloat16";
  static constexpr double unit_roundoff = 0x1.0p-8;
  static constexpr double huge = 3.0e38;
  static __nv_bfloat16 from_double(double v) { return __float2bfloat16_rn(static_cast<float>(v)); }
  static double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }
};

/// Element-wise bound: |out - ref| <= rel * scale + abs, where scale is |ref| for forward and
/// |y| (|dy| + |dot|) for backward (the magnitude before cancellation). `rel` allows the
/// output rounding (one unit roundoff) plus the float32 arithmetic; `abs` the flush of
/// results below the smallest normal.
template <class T>
struct tolerance {
  static constexpr double rel = 2.0 * dtype<T>::unit_roundoff + 1.0e-5;
  /// Normwise over a row, ||out - ref|| / ||scale||: one unit roundoff (the rounding errors of
  /// a row's elements are at most half an ulp each and do not all reach it) plus float32.
  static constexpr double norm = dtype<T>::unit_roundoff + 1.0e-5;
  static constexpr double abs = std::is_same_v<T, __half> ? 1.0e-7 : 1.0e-36;
  /// |sum of a softmax row - 1|: the rounding of every element plus float32 sums (plus
  /// cols * abs, for outputs below the smallest normal, e.g. 1/600000 in fp16).
  static constexpr double row_sum = 2.0 * dtype<T>::unit_roundoff + 1.0e-5;
};

}  // namespace rowsoftmax::test
