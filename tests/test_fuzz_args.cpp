// SPDX-License-Identifier: Apache-2.0
// Host-only argument fuzzing (built with AddressSanitizer and UndefinedBehaviorSanitizer, see
// CMakeLists.txt): random and extreme int64 sizes and strides, pointer values and alignments, in
// place, interleaved and partly overlapping tensors, outputs of another element size (the fused
// launchers' output types), checked by the launchers' own rules
// (detail::check_args, which every launcher runs before any CUDA call) against an independent
// oracle written from the documented contract, and each refusal explained. Plain C++: no CUDA
// call, so it runs (and must pass) anywhere.
//
//   ROWSOFTMAX_FUZZ_SECONDS (default 5)  how long to draw calls
//   ROWSOFTMAX_FUZZ_SEED (default: from the clock, printed)  reproduces a run
#include <rowsoftmax/detail/host.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using rowsoftmax::detail::arg_rule;
using rowsoftmax::detail::tensor_arg;
using i128 = __int128;

struct splitmix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t below(std::int64_t n) {
    return static_cast<std::int64_t>(next() % std::uint64_t(n));
  }
  bool chance(int percent) { return below(100) < percent; }
};

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

/// a + b (b >= 0), at most int64_max.
std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  return a > int64_max - b ? int64_max : a + b;
}

/// A size: mostly small, sometimes around powers of two, huge, or negative.
std::int64_t draw_size(splitmix& g) {
  switch (g.below(8)) {
    case 0:
      return g.below(4);  // 0..3
    case 1:
      return -1 - g.below(3);
    case 2:
      return (std::int64_t{1} << g.below(63)) + g.below(3) - 1;
    case 3:
      return int64_max - g.below(3);
    default:
      return 1 + g.below(70);
  }
}

/// One call: N tensors (the last the output), their element size (the output's may differ:
/// tensor_arg::size), rows and cols.
struct call {
  std::size_t elem = 4;
  std::int64_t rows = 0, cols = 0;
  std::vector<tensor_arg> t;
  std::string str() const {
    std::ostringstream s;
    s << "elem " << elem << " rows " << rows << " cols " << cols;
    for (auto const& x : t)
      s << " [" << x.ptr << " stride " << x.stride << (x.output ? " out" : "")
        << (x.size != 0 ? " size " + std::to_string(x.size) : "") << "]";
    return s.str();
  }
};

call draw_call(splitmix& g) {
  call c;
  c.elem = g.chance(50) ? 2 : 4;
  const int n = g.chance(50) ? 2 : 3;
  c.rows = g.chance(70) ? 1 + g.below(40) : draw_size(g);
  c.cols = g.chance(70) ? 1 + g.below(40) : draw_size(g);
  const std::int64_t e = static_cast<std::int64_t>(c.elem);
  const std::int64_t base_stride = g.chance(80) && c.cols > 0 && c.cols < (int64_max >> 2)
                                       ? c.cols + g.below(4) * g.below(3)
                                       : draw_size(g);
  // The first tensor somewhere in a 48-bit address space, or at an edge of the 64-bit one.
  std::uint64_t base = g.chance(90) ? (g.next() & 0x0000ffffffff0000ull) + 0x10000
                                    : ~std::uint64_t{0} - (g.next() & 0xffff);
  if (g.chance(10)) base += 1;  // misaligned
  for (int i = 0; i < n; ++i) {
    tensor_arg x{};
    x.output = i == n - 1;
    x.stride = g.chance(75)   ? base_stride
               : g.chance(50) ? add_sat(base_stride, 1 + g.below(5))
                              : draw_size(g);
    std::uint64_t p = base;
    if (i > 0) {
      switch (g.below(6)) {
        case 0:  // the first tensor (in place)
          p = base;
          x.stride = g.chance(80) ? c.t[0].stride : x.stride;
          break;
        case 1:  // a few elements (or bytes) away: partial overlap, or just beside
          p = base +
              static_cast<std::uint64_t>(g.below(3 * (c.cols > 0 && c.cols < 100 ? c.cols : 8)) *
                                         (g.chance(90) ? e : 1));
          break;
        case 2:  // interleaved rows: a column block further, the same stride
          p = base + static_cast<std::uint64_t>(
                         (c.cols > 0 && c.cols < (int64_max >> 8) ? c.cols : 1) * e);
          x.stride = c.t[0].stride;
          break;
        case 3:  // just past the first tensor's last row, or a row earlier
          if (c.rows > 0 && c.rows < 1000 && c.t[0].stride > 0 && c.t[0].stride < (int64_max >> 20))
            p = base + static_cast<std::uint64_t>(((c.rows - g.below(2)) * c.t[0].stride) * e);
          break;
        case 4:
          p = 0;
          break;
        default:  // elsewhere
          p = (g.next() & 0x0000ffffffff0000ull) + 0x10000;
          break;
      }
    } else if (g.chance(3)) {
      p = 0;
    }
    x.ptr = reinterpret_cast<void const*>(static_cast<std::uintptr_t>(p));
    c.t.push_back(x);
  }
  // A quarter of the calls write another element type (2 bytes from 4, 4 from 2).
  if (g.chance(25)) c.t.back().size = static_cast<unsigned char>(6 - c.elem);
  return c;
}

/// Tensor x's element size in call c.
i128 size_of(call const& c, tensor_arg const& x) {
  return static_cast<i128>(x.size != 0 ? x.size : c.elem);
}

/// Whether two tensors share a byte (1) or not (0) by the documented rule, from first
/// principles: equal strides and element sizes, every row distance tried in turn; otherwise the
/// address ranges. -1: too many rows to try.
int oracle_meet(call const& c, tensor_arg const& x, tensor_arg const& y) {
  const i128 a = static_cast<i128>(reinterpret_cast<std::uintptr_t>(x.ptr));
  const i128 b = static_cast<i128>(reinterpret_cast<std::uintptr_t>(y.ptr));
  const i128 e = size_of(c, x), w = static_cast<i128>(c.cols) * e;
  if (x.stride == y.stride && e == size_of(c, y) && c.rows > 1) {
    if (c.rows > 4096) return -1;
    const i128 s = static_cast<i128>(x.stride) * e;
    for (std::int64_t k = -(c.rows - 1); k <= c.rows - 1; ++k) {
      const i128 d = b + k * s - a;  // row j of y against row i of x, j - i = k
      if (d > -w && d < w) return 1;
    }
    return 0;
  }
  const i128 ex = (static_cast<i128>(c.rows - 1) * x.stride + c.cols) * e;
  const i128 ey = (static_cast<i128>(c.rows - 1) * y.stride + c.cols) * size_of(c, y);
  return a < b + ey && b < a + ex ? 1 : 0;
}

/// The rule the contract says the call breaks first; -1 where it cannot tell (rows too many to
/// try pairs of).
int oracle(call const& c) {
  if (c.rows < 0) return static_cast<int>(arg_rule::negative_rows);
  if (c.cols < 0) return static_cast<int>(arg_rule::negative_cols);
  if (c.rows == 0) return static_cast<int>(arg_rule::ok);
  if (c.cols == 0) return static_cast<int>(arg_rule::zero_cols);
  for (auto const& x : c.t) {
    if (x.ptr == nullptr) return static_cast<int>(arg_rule::null_pointer);
    if (static_cast<i128>(reinterpret_cast<std::uintptr_t>(x.ptr)) % size_of(c, x) != 0)
      return static_cast<int>(arg_rule::misaligned);
    if (x.stride < c.cols) return static_cast<int>(arg_rule::stride_below_cols);
    const i128 last = static_cast<i128>(c.rows - 1) * x.stride + c.cols;
    if (last > static_cast<i128>(int64_max) / size_of(c, x))
      return static_cast<int>(arg_rule::offset_overflow);
  }
  for (auto const& o : c.t)
    for (auto const& x : c.t)
      if (&o != &x && o.output && o.ptr == x.ptr) {
        if (size_of(c, o) != size_of(c, x)) return static_cast<int>(arg_rule::in_place_type);
        if (o.stride != x.stride) return static_cast<int>(arg_rule::in_place_stride);
      }
  for (auto const& o : c.t)
    for (auto const& x : c.t)
      if (&o != &x && o.output && !x.output && o.ptr != x.ptr) {
        const int m = oracle_meet(c, o, x);
        if (m < 0) return -1;
        if (m == 1) return static_cast<int>(arg_rule::overlap);
      }
  return static_cast<int>(arg_rule::ok);
}

template <std::size_t N>
rowsoftmax::detail::arg_check run_checks(call const& c, const char** why) {
  tensor_arg t[N];
  for (std::size_t i = 0; i < N; ++i) t[i] = c.t[i];
  static constexpr char const* names2[2] = {"x", "y"};
  static constexpr char const* names3[3] = {"dy", "y", "dx"};
  const auto r = rowsoftmax::detail::check_args(t, c.elem, c.rows, c.cols);
  if constexpr (N == 2) {
    *why = rowsoftmax::detail::explain_args(r, names2, t, c.elem, c.rows, c.cols);
  } else {
    *why = rowsoftmax::detail::explain_args(r, names3, t, c.elem, c.rows, c.cols);
  }
  bool nothing = false;
  const cudaError_t e = rowsoftmax::detail::validate(t, c.elem, c.rows, c.cols, &nothing);
  EXPECT_EQ(e == cudaSuccess, r.rule == arg_rule::ok) << c.str();
  EXPECT_EQ(nothing, r.rule == arg_rule::ok && c.rows == 0) << c.str();
  return r;
}

}  // namespace

TEST(ArgumentFuzz, ChecksAgreeWithTheContract) {
  const char* env_s = std::getenv("ROWSOFTMAX_FUZZ_SECONDS");
  const char* env_seed = std::getenv("ROWSOFTMAX_FUZZ_SEED");
  const double seconds = env_s ? std::atof(env_s) : 5.0;
  const std::uint64_t seed =
      env_seed
          ? std::strtoull(env_seed, nullptr, 0)
          : static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::printf("argument fuzz: seed %llu (ROWSOFTMAX_FUZZ_SEED=%llu reproduces), %.0f s\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              seconds);
  splitmix g{seed};
  const auto start = std::chrono::steady_clock::now();
  std::int64_t calls = 0, refused = 0, unsure = 0;
  std::int64_t by_rule[16] = {};
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    for (int batch = 0; batch < 256; ++batch, ++calls) {
      const call c = draw_call(g);
      const char* why = nullptr;
      const auto r = c.t.size() == 2 ? run_checks<2>(c, &why) : run_checks<3>(c, &why);
      const int expected = oracle(c);
      ++by_rule[static_cast<int>(r.rule)];
      if (r.rule != arg_rule::ok) ++refused;
      EXPECT_EQ(why != nullptr, r.rule != arg_rule::ok) << c.str();
      if (expected < 0) {
        ++unsure;
        continue;
      }
      if (static_cast<int>(r.rule) != expected) {
        ADD_FAILURE() << "call " << calls << ": " << c.str() << ": rule "
                      << static_cast<int>(r.rule) << ", contract says " << expected
                      << " (ROWSOFTMAX_FUZZ_SEED=" << seed << ")";
        return;
      }
    }
  }
  std::printf("argument fuzz: %lld calls, %lld refused, %lld with too many rows for the oracle\n",
              static_cast<long long>(calls), static_cast<long long>(refused),
              static_cast<long long>(unsure));
  for (int i = 0; i <= static_cast<int>(arg_rule::overlap); ++i)
    std::printf("  rule %d: %lld\n", i, static_cast<long long>(by_rule[i]));
  // Every rule is reached: the generator is not biased away from one.
  for (int i = 0; i <= static_cast<int>(arg_rule::overlap); ++i)
    EXPECT_GT(by_rule[i], 0) << "rule " << i << " never drawn";
}

// The two kinds of overlap decision, by hand: equal strides decided exactly (interleaved rows
// that share nothing pass), unequal ones by address range.
TEST(ArgumentFuzz, OverlapByStrideKind) {
  auto p = [](std::uintptr_t a) { return reinterpret_cast<void const*>(a); };
  const std::int64_t rows = 8, cols = 16;
  // softmax of t[:, 0, :] into t[:, 1, :] of a [rows, 2, cols] float tensor: no shared element.
  const tensor_arg interleaved[2] = {{p(0x10000), 2 * cols, false},
                                     {p(0x10000 + cols * 4), 2 * cols, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(interleaved, 4, rows, cols).rule, arg_rule::ok);
  // One element further: row i of y overlaps row i of x.
  const tensor_arg shifted[2] = {{p(0x10000), 2 * cols, false},
                                 {p(0x10000 + (cols - 1) * 4), 2 * cols, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(shifted, 4, rows, cols).rule, arg_rule::overlap);
  // Interleaved but with unequal strides: the ranges meet, refused (conservative).
  const tensor_arg unequal[2] = {{p(0x10000), 2 * cols, false},
                                 {p(0x10000 + cols * 4), 2 * cols + 1, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(unequal, 4, rows, cols).rule, arg_rule::overlap);
  // Backward: dx over part of y is refused; dx == y (in place) is not.
  const tensor_arg partial[3] = {
      {p(0x100000), cols, false}, {p(0x200000), cols, false}, {p(0x200000 + 4 * 4), cols, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(partial, 4, rows, cols).rule, arg_rule::overlap);
  const tensor_arg in_place[3] = {
      {p(0x100000), cols, false}, {p(0x200000), cols, false}, {p(0x200000), cols, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(in_place, 4, rows, cols).rule, arg_rule::ok);
  // Right after the last row: apart.
  const tensor_arg after[2] = {{p(0x10000), cols, false},
                               {p(0x10000 + rows * cols * 4), cols, true}};
  EXPECT_EQ(rowsoftmax::detail::check_args(after, 4, rows, cols).rule, arg_rule::ok);
}

// An output of another element type (the fused launchers' output types): in place refused,
// vectors where every tensor's rows start the same number of elements into their windows (16
// bytes of the input's elements, as many of the output's), never contiguous (tiled rows are
// normalized over the input's tile).
TEST(ArgumentFuzz, OtherOutputType) {
  using rowsoftmax::detail::check_args;
  using rowsoftmax::detail::vector_layout_of;
  auto p = [](std::uintptr_t a) { return reinterpret_cast<void const*>(a); };
  const std::int64_t rows = 4, cols = 64;
  // bf16 in, fp32 out: windows of 8 elements, 16 bytes in and 32 out.
  const tensor_arg aligned[2] = {{p(0x10000), cols, false, 2}, {p(0x20000), cols, true, 4}};
  auto l = vector_layout_of(aligned, 2, rows, cols);
  EXPECT_EQ(l.vec, 8);
  EXPECT_FALSE(l.shifted);
  EXPECT_FALSE(l.contiguous);
  const tensor_arg same_type[2] = {{p(0x10000), cols, false, 2}, {p(0x20000), cols, true, 2}};
  EXPECT_TRUE(vector_layout_of(same_type, 2, rows, cols).contiguous);
  // One element into the window in each: bf16 at +2 bytes, fp32 at +4 bytes.
  const tensor_arg one_in[2] = {{p(0x10002), cols, false, 2}, {p(0x20004), cols, true, 4}};
  l = vector_layout_of(one_in, 2, rows, cols);
  EXPECT_EQ(l.vec, 8);
  EXPECT_TRUE(l.shifted);
  // fp32 at +16 bytes is 4 elements into its 32-byte window: not the input's head, elements.
  const tensor_arg apart[2] = {{p(0x10000), cols, false, 2}, {p(0x20010), cols, true, 4}};
  EXPECT_EQ(vector_layout_of(apart, 2, rows, cols).vec, 1);
  // fp32 in, bf16 out: windows of 4 elements, 16 bytes in and 8 out.
  const tensor_arg narrow[2] = {{p(0x10004), cols, false, 4}, {p(0x20002), cols, true, 2}};
  l = vector_layout_of(narrow, 4, rows, cols);
  EXPECT_EQ(l.vec, 4);
  EXPECT_TRUE(l.shifted);
  // In place with another type: refused with its own rule, explained; misaligned by its own size.
  const tensor_arg in_place[2] = {{p(0x10000), cols, false, 2}, {p(0x10000), cols, true, 4}};
  const auto r = check_args(in_place, 2, rows, cols);
  EXPECT_EQ(r.rule, arg_rule::in_place_type);
  static constexpr char const* names[2] = {"x", "y"};
  const char* why = rowsoftmax::detail::explain_args(r, names, in_place, 2, rows, cols);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("element types differ (4 and 2 bytes)"), std::string::npos)
      << why;
  const tensor_arg misaligned[2] = {{p(0x10002), cols, false, 2}, {p(0x20002), cols, true, 4}};
  EXPECT_EQ(check_args(misaligned, 2, rows, cols).rule, arg_rule::misaligned);
  // fp32 y right after a bf16 x's last row: apart; one element earlier: overlapping.
  const tensor_arg after[2] = {{p(0x10000), cols, false, 2},
                               {p(0x10000 + rows * cols * 2), cols, true, 4}};
  EXPECT_EQ(check_args(after, 2, rows, cols).rule, arg_rule::ok);
  const tensor_arg over[2] = {{p(0x10000), cols, false, 2},
                              {p(0x10000 + rows * cols * 2 - 4), cols, true, 4}};
  EXPECT_EQ(check_args(over, 2, rows, cols).rule, arg_rule::overlap);
}
