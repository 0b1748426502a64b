// SPDX-License-Identifier: Apache-2.0
// Host-only: the algebra of the online (max, sum) combine that every tier uses.
#include <rowsoftmax/detail/math.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference.hpp"

namespace {

using rowsoftmax::detail::online_reduce;
using rowsoftmax::detail::partial;
using rowsoftmax::detail::sum_reduce;
constexpr float inf = std::numeric_limits<float>::infinity();

// The partial of a run of values, as a thread computes it.
partial fold(std::vector<float> const& v) {
  partial p = online_reduce::identity();
  for (float x : v) p = online_reduce::combine(p, {x, 1.0f});
  return p;
}

// sum(exp(x - M)) in float64 for finite x.
double exact_sum(std::vector<float> const& v, double m) {
  double s = 0;
  for (float x : v) s += std::exp(double(x) - m);
  return s;
}

}  // namespace

TEST(OnlineCombine, IdentityIsNeutral) {
  const partial a{3.5f, 2.25f};
  const partial l = online_reduce::combine(online_reduce::identity(), a);
  const partial r = online_reduce::combine(a, online_reduce::identity());
  EXPECT_EQ(l.m, a.m);
  EXPECT_EQ(l.s, a.s);
  EXPECT_EQ(r.m, a.m);
  EXPECT_EQ(r.s, a.s);
}

TEST(OnlineCombine, IsCommutativeBitwise) {
  rowsoftmax::test::rng g(1);
  for (int i = 0; i < 10000; ++i) {
    const partial a{float(g.uniform() * 40 - 20), float(g.uniform() * 100)};
    const partial b{float(g.uniform() * 40 - 20), float(g.uniform() * 100)};
    const partial ab = online_reduce::combine(a, b);
    const partial ba = online_reduce::combine(b, a);
    ASSERT_EQ(ab.m, ba.m);
    ASSERT_EQ(ab.s, ba.s);
  }
}

TEST(OnlineCombine, OrderIndependentWithinRounding) {
  rowsoftmax::test::rng g(2);
  std::vector<float> v(4096);
  for (float& x : v) x = float(g.uniform() * 30 - 15);
  double m = -1e300;
  for (float x : v) m = std::max(m, double(x));
  const double exact = exact_sum(v, m);
  // Sequential, reversed, and a pairwise tree must agree with float64 to float rounding.
  const partial seq = fold(v);
  const partial rev = fold(std::vector<float>(v.rbegin(), v.rend()));
  std::vector<partial> level;
  for (float x : v) level.push_back({x, 1.0f});
  while (level.size() > 1) {
    std::vector<partial> next;
    for (size_t i = 0; i < level.size(); i += 2)
      next.push_back(online_reduce::combine(level[i], level[i + 1]));
    level = next;
  }
  for (partial p : {seq, rev, level[0]}) {
    EXPECT_EQ(p.m, float(m));
    EXPECT_NEAR(p.s, exact, exact * 4096 * 0x1.0p-24);
  }
  // A tree rounds each element log2(n) times, each rescale by about |x - M| ulps of the exponent.
  EXPECT_NEAR(level[0].s, exact, exact * 64 * 0x1.0p-24);
}

TEST(OnlineCombine, EmptyAndMinusInfPartialsContributeExactlyZero) {
  const partial empty = online_reduce::identity();
  const partial only_neg_inf{-inf, 0.0f};
  const partial r = online_reduce::combine(empty, only_neg_inf);
  EXPECT_EQ(r.m, -inf);
  EXPECT_EQ(r.s, 0.0f);  // not exp(-inf - -inf) = NaN
  const partial a{1.0f, 3.0f};
  const partial b = online_reduce::combine(online_reduce::combine(r, a), empty);
  EXPECT_EQ(b.m, 1.0f);
  EXPECT_EQ(b.s, 3.0f);
}

TEST(OnlineCombine, NaNReachesTheSumAndStays) {
  const partial nan_part{-inf, std::numeric_limits<float>::quiet_NaN()};  // a slice of NaNs
  const partial a{2.0f, 1.0f};
  EXPECT_TRUE(std::isnan(online_reduce::combine(nan_part, a).s));
  EXPECT_TRUE(std::isnan(online_reduce::combine(a, nan_part).s));
  EXPECT_TRUE(std::isnan(fold({1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f}).s));
}

TEST(OnlineCombine, PlusInfGivesNaNSum) {
  // torch.softmax of a row holding +inf is NaN: exp(inf - inf).
  const partial p = fold({1.0f, inf, 2.0f});
  EXPECT_EQ(p.m, inf);
  EXPECT_TRUE(std::isnan(p.s));
}

TEST(OnlineCombine, HugeMagnitudesDoNotOverflow) {
  const partial p = fold({3.0e38f, -3.0e38f, 3.0e38f});
  EXPECT_EQ(p.m, 3.0e38f);
  EXPECT_FLOAT_EQ(p.s, 2.0f);
}

TEST(SumCombine, AddsSums) {
  const partial p =
      sum_reduce::combine(sum_reduce::combine(sum_reduce::identity(), {0, 1.5f}), {0, 2.0f});
  EXPECT_EQ(p.s, 3.5f);
}

// The fused exp of the staged rows (one fma an element): exp(x - shift) within float rounding
// of float64 for shifts up to 2^20, including the 16-bit maxima where dropping the product's
// rounding error would cost up to 0.3% (65504 * log2e rounded is off by up to 2^-8).
TEST(ExactDivisor, EveryMultipleOfEveryClusterSizeAndLargerDivisors) {
  using rowsoftmax::detail::exact_divisor;
  for (unsigned d = 1; d <= 16; ++d)
    for (unsigned q = 0; q < 100000; ++q) ASSERT_EQ(exact_divisor(d).divide(q * d), q) << d;
  // The largest quotients, and divisors with many factors of two or none.
  for (unsigned d : {16u, 12u, 15u, 1u << 20, 3u << 28, 0x7fffffffu, 0xffffffffu}) {
    const unsigned most = 0xffffffffu / d;
    for (unsigned q : {most, most - 1, most / 2, most / 3 + 1})
      EXPECT_EQ(exact_divisor(d).divide(q * d), q) << d << " " << q;
  }
}

TEST(FusedExp, MatchesTheExactExpWherePlainFmaWouldNot) {
  using rowsoftmax::detail::fused_exp;
  using rowsoftmax::detail::shifted_exp;
  for (float shift :
       {0.0f, 1.0f, -3.25f, 100.0f, 12345.678f, 65504.0f, -65504.0f, 1.0e6f, -1048575.0f}) {
    ASSERT_TRUE(fused_exp::fits(shift));
    const fused_exp e(shift);
    for (float d : {0.0f, -1.0e-3f, -0.5f, -1.0f, -7.0f, -30.0f, -80.0f}) {
      const float x = shift + d;
      const double want = std::exp(double(x) - double(shift));
      // The rounding of (x - shift) * log2e, as in shifted_exp: 2^-24 of the exponent.
      const double tol = 1e-6 * (1 + std::fabs(double(x) - double(shift))) * want;
      EXPECT_NEAR(double(e(x)) * e.scale, want, tol) << "shift " << shift << " x " << x;
      EXPECT_NEAR(shifted_exp{shift}(x), want, tol) << "shift " << shift << " x " << x;
    }
  }
  for (float shift : {0x1p20f, -0x1p20f, 3.0e9f, 3.0e38f, inf})
    EXPECT_FALSE(fused_exp::fits(shift));
  // A shift of 0 (an empty share, safe_shift of -inf): exactly exp2.
  const fused_exp z(0.0f);
  EXPECT_EQ(z.scale, 1.0f);
  EXPECT_EQ(z(-inf), 0.0f);
}

// The masked ops' divisions of a row index by the queries and heads: every n for small
// divisors, and the extremes of n for divisors across the 32-bit range, against the division.
TEST(FastDivider, EveryNumeratorForSmallDivisorsAndTheExtremesForLargeOnes) {
  using rowsoftmax::detail::fast_divider;
  for (unsigned d = 1; d <= 64; ++d) {
    const fast_divider f(d);
    for (unsigned n = 0; n < 200000; ++n) ASSERT_EQ(f.divide(n), n / d) << n << " / " << d;
  }
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned>(state >> 32);
  };
  for (int i = 0; i < 20000; ++i) {
    // Powers of two and powers of two plus one first, then random divisors of every size.
    const unsigned d =
        i < 64 ? (1u << (i % 32)) + static_cast<unsigned>(i / 32) : next() >> (next() % 32);
    if (d == 0) continue;
    const fast_divider f(d);
    for (unsigned n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 0xffffffffu, 0xfffffffeu,
                       0xffffffffu - 0xffffffffu % d, next()})
      ASSERT_EQ(f.divide(n), n / d) << n << " / " << d;
  }
}
