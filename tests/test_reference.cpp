// SPDX-License-Identifier: Apache-2.0
// Host-only: the float64 reference the GPU tests trust.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference.hpp"

using rowsoftmax::test::reference_backward;
using rowsoftmax::test::reference_forward;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
}

TEST(Reference, ForwardKnownValues) {
  const double x[] = {0.0, std::log(2.0), -inf};
  double y[3];
  reference_forward(x, y, 3);
  EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 3.0, 1e-15);
  EXPECT_EQ(y[2], 0.0);
}

TEST(Reference, ForwardIsShiftInvariantAndStable) {
  const double x[] = {1000.0, 1001.0};
  const double z[] = {0.0, 1.0};
  double a[2], b[2];
  reference_forward(x, a, 2);
  reference_forward(z, b, 2);
  EXPECT_NEAR(a[0], b[0], 1e-15);
  EXPECT_NEAR(a[1], b[1], 1e-15);
}

TEST(Reference, SpecialValuesFollowTorch) {
  double y[2];
  const double nan_row[] = {1.0, std::numeric_limits<double>::quiet_NaN()};
  reference_forward(nan_row, y, 2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  const double inf_row[] = {1.0, inf};
  reference_forward(inf_row, y, 2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  const double masked_row[] = {-inf, -inf};
  reference_forward(masked_row, y, 2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

TEST(Reference, BackwardMatchesFiniteDifferences) {
  // d/dx of L(x) = sum(w * softmax(x)) is reference_backward(w, softmax(x)).
  rowsoftmax::test::rng g(3);
  const int n = 9;
  std::vector<double> x(n), w(n), y(n), dx(n), yp(n), ym(n);
  for (int i = 0; i < n; ++i) {
    x[i] = g.uniform() * 4 - 2;
    w[i] = g.uniform() * 2 - 1;
  }
  reference_forward(x.data(), y.data(), n);
  reference_backward(w.data(), y.data(), dx.data(), n);
  const double h = 1e-6;
  for (int i = 0; i < n; ++i) {
    std::vector<double> xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    reference_forward(xp.data(), yp.data(), n);
    reference_forward(xm.data(), ym.data(), n);
    double lp = 0, lm = 0;
    for (int j = 0; j < n; ++j) {
      lp += w[j] * yp[j];
      lm += w[j] * ym[j];
    }
    EXPECT_NEAR(dx[i], (lp - lm) / (2 * h), 1e-8) << i;
  }
}
