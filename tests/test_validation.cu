// SPDX-License-Identifier: Apache-2.0
// Host-only: bad arguments are refused with cudaErrorInvalidValue before any CUDA call, and the
// launchers' caches index only their own slots; these run (and must pass) on machines without a
// GPU. The launchers are declared, not instantiated (extern.cuh): their kernels come from the
// one instantiating unit, warnings_tu.cu, linked in.
#include <rowsoftmax/extern.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

namespace {

// Never dereferenced: validation rejects the call before anything touches memory.
template <class T>
T* fake(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

template <class T>
class Validation : public ::testing::Test {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(Validation, Types);

constexpr cudaError_t bad = cudaErrorInvalidValue;

}  // namespace

TYPED_TEST(Validation, ForwardRejectsBadArguments) {
  using T = TypeParam;
  T* x = fake<T>(0x10000);
  T* y = fake<T>(0x20000);
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, y, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, nullptr, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, y, -1, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, y, 4, -1), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, y, 4, 0), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 7, y, 8, 4, 8), bad);  // stride < cols
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 8, y, 7, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(fake<T>(0x10001), 8, y, 8, 4, 8), bad);  // misaligned
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 8, fake<T>(0x20001), 8, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, big, y, big, 4, 8), bad);  // offsets overflow
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 8, y, 8, big, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 8, x, 16, 4, 8), bad);  // in place, other stride
  // One row whose bytes alone overflow int64 (found by the argument fuzzer, test_fuzz_args.cpp).
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() - 1;
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, huge, y, huge, 1, huge), bad);
  // An output that overlaps the input without being it (in place is y == x with equal strides);
  // interleaved rows that share nothing are explained as fine.
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(x, 8, x + 3, 8, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::explain_forward<T>(x, 16, x + 8, 16, 4, 8), nullptr);
  EXPECT_NE(rowsoftmax::explain_forward<T>(x, 16, x + 7, 16, 4, 8), nullptr);
}

TYPED_TEST(Validation, BackwardRejectsBadArguments) {
  using T = TypeParam;
  T* dy = fake<T>(0x10000);
  T* y = fake<T>(0x20000);
  T* dx = fake<T>(0x30000);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(nullptr, y, dx, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, nullptr, dx, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, y, nullptr, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, y, dx, -3, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, y, dx, 4, 0), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, 8, y, 4, dx, 8, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, 8, y, 8, dx, 8 - 1, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, 8, y, 8, fake<T>(0x30001), 8, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, 8, y, 8, dy, 9, 4, 8), bad);  // in place
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(dy, 8, y, 16, y, 8, 4, 8), bad);
}

TYPED_TEST(Validation, ZeroRowsIsANoOpEvenWithNullPointers) {
  using T = TypeParam;
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, nullptr, 0, 8), cudaSuccess);
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, nullptr, 0, 0), cudaSuccess);
  EXPECT_EQ(rowsoftmax::softmax_backward<T>(nullptr, nullptr, nullptr, 0, 5), cudaSuccess);
  rowsoftmax::plan p;
  p.config = 7;
  EXPECT_EQ(rowsoftmax::softmax_forward_plan<T>(nullptr, 8, nullptr, 8, 0, 8, &p), cudaSuccess);
  EXPECT_EQ(p.config, 0);  // the default plan
}

TYPED_TEST(Validation, PlanQueriesValidateLikeTheLaunchers) {
  using T = TypeParam;
  T* x = fake<T>(0x10000);
  rowsoftmax::plan p;
  EXPECT_EQ(rowsoftmax::softmax_forward_plan<T>(x, 8, x, 8, 4, 8, nullptr), bad);
  EXPECT_EQ(rowsoftmax::softmax_forward_plan<T>(x, 4, x, 4, 4, 8, &p), bad);
  EXPECT_EQ(rowsoftmax::softmax_backward_plan<T>(x, 8, x, 8, nullptr, 8, 4, 8, &p), bad);
}

TEST(Validation, NullLimitsPointer) {
  EXPECT_EQ(rowsoftmax::query_device_limits(0, nullptr), bad);
}

// The launchers' per-kernel caches (occupancy and cluster fit, detail/dispatch.cuh) keep one
// slot for each stash of whole and half tiles: distinct stashes never share a slot, and stashes
// beyond the caches' range (only forced plans have them), negative ones and devices beyond it
// are never cached (asked every time) rather than indexed out of range.
TEST(Dispatch, StashCacheSlotsAreDistinctAndInRange) {
  namespace d = rowsoftmax::detail;
  std::set<int> keys;
  for (int tiles = -1; tiles <= d::max_cached_tiles + 1; ++tiles)
    for (int halves = -1; halves <= d::max_cached_halves + 1; ++halves) {
      rowsoftmax::plan p{};
      p.stash_tiles = tiles;
      p.stash_halves = halves;
      const bool in_range =
          tiles >= 0 && tiles < d::max_cached_tiles && halves >= 0 && halves < d::max_cached_halves;
      SCOPED_TRACE(std::to_string(tiles) + " tiles, " + std::to_string(halves) + " halves");
      EXPECT_EQ(d::cacheable(p, 0), in_range);
      EXPECT_FALSE(d::cacheable(p, -1));
      EXPECT_FALSE(d::cacheable(p, d::max_cached_devices));
      if (!in_range) continue;
      EXPECT_GE(d::stash_key(p), 0);
      EXPECT_LT(d::stash_key(p), d::max_cached_stash);
      EXPECT_TRUE(keys.insert(d::stash_key(p)).second);
    }
  rowsoftmax::plan huge{};
  huge.stash_tiles = 1 << 30;  // no key computed from it may overflow
  EXPECT_FALSE(d::cacheable(huge, 0));
  huge.stash_tiles = 0;
  huge.stash_halves = 1 << 30;
  EXPECT_FALSE(d::cacheable(huge, 0));
}

// explain_forward / explain_backward: for every rule, the launcher refuses the call and the
// explanation names the argument and the values; for valid arguments, no explanation.
namespace {

// The launcher's result and its explanation, side by side.
struct refusal {
  cudaError_t err;
  std::string why;
};

template <class T>
refusal forward(T const* x, std::int64_t xs, T* y, std::int64_t ys, std::int64_t rows,
                std::int64_t cols) {
  const char* why = rowsoftmax::explain_forward(x, xs, y, ys, rows, cols);
  return {rowsoftmax::softmax_forward(x, xs, y, ys, rows, cols), why ? why : "(null)"};
}

template <class T>
refusal backward(T const* dy, std::int64_t dys, T const* y, std::int64_t ys, T* dx,
                 std::int64_t dxs, std::int64_t rows, std::int64_t cols) {
  const char* why = rowsoftmax::explain_backward(dy, dys, y, ys, dx, dxs, rows, cols);
  return {rowsoftmax::softmax_backward(dy, dys, y, ys, dx, dxs, rows, cols), why ? why : "(null)"};
}

// The launcher refused the call and explained it with `sentence` (exactly, or, where `part`,
// a sentence containing it).
::testing::AssertionResult refused(refusal const& r, std::string const& sentence,
                                   bool part = false) {
  if (r.err != cudaErrorInvalidValue)
    return ::testing::AssertionFailure() << "not refused: " << cudaGetErrorName(r.err);
  if (part ? r.why.find(sentence) == std::string::npos : r.why != sentence)
    return ::testing::AssertionFailure() << "explained as \"" << r.why << "\"";
  return ::testing::AssertionSuccess();
}
::testing::AssertionResult refused_mentioning(refusal const& r, std::string const& part) {
  return refused(r, part, true);
}

}  // namespace

TYPED_TEST(Validation, ExplainsEveryForwardRule) {
  using T = TypeParam;
  T* x = fake<T>(0x10000);
  T* y = fake<T>(0x20000);
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_TRUE(refused(forward<T>(x, 8, y, 8, -1, 8), "rows (-1) is negative"));
  EXPECT_TRUE(refused(forward<T>(x, 8, y, 8, 4, -2), "cols (-2) is negative"));
  EXPECT_TRUE(refused(forward<T>(x, 8, y, 8, 0, -2), "cols (-2) is negative"));
  EXPECT_TRUE(refused(forward<T>(x, 8, y, 8, 4, 0),
                      "cols is 0 while rows (4) is not: a row needs at least one element"));
  EXPECT_TRUE(refused(forward<T>(nullptr, 8, y, 8, 4, 8), "x is null while rows (4) is not 0"));
  EXPECT_TRUE(refused(forward<T>(x, 8, nullptr, 8, 4, 8), "y is null while rows (4) is not 0"));
  EXPECT_TRUE(refused(
      forward<T>(fake<T>(0x10001), 8, y, 8, 4, 8),
      "x (0x10001) is not aligned to its element size (" + std::to_string(sizeof(T)) + " bytes)"));
  EXPECT_TRUE(refused(forward<T>(x, 7, y, 8, 4, 8), "x_row_stride (7) is smaller than cols (8)"));
  EXPECT_TRUE(refused(forward<T>(x, 8, y, 7, 4, 8), "y_row_stride (7) is smaller than cols (8)"));
  EXPECT_TRUE(refused_mentioning(forward<T>(x, big, y, big, 4, 8),
                                 "x's last element, (rows - 1) * x_row_stride + cols"));
  EXPECT_TRUE(refused_mentioning(forward<T>(x, 8, y, 8, big, 8), "beyond the int64 byte range"));
  EXPECT_TRUE(refused(forward<T>(x, 8, x, 16, 4, 8),
                      "y is x (in place) but y_row_stride (16) differs from x_row_stride (8); in "
                      "place needs equal strides"));
  // Valid: no explanation (the launchers are not called: these pointers are not memory).
  EXPECT_EQ(rowsoftmax::explain_forward<T>(x, 8, y, 8, 4, 8), nullptr);
  EXPECT_EQ(rowsoftmax::explain_forward<T>(x, 8, x, 8, 4, 8), nullptr);  // in place
  EXPECT_EQ(rowsoftmax::explain_forward<T>(nullptr, nullptr, 0, 8), nullptr);
  EXPECT_EQ(rowsoftmax::explain_forward<T>(x, y, 4, 8), nullptr);
  EXPECT_STREQ(rowsoftmax::explain_forward<T>(x, nullptr, 4, 8),
               "y is null while rows (4) is not 0");
}

TYPED_TEST(Validation, ExplainsEveryBackwardRule) {
  using T = TypeParam;
  T* dy = fake<T>(0x10000);
  T* y = fake<T>(0x20000);
  T* dx = fake<T>(0x30000);
  EXPECT_TRUE(refused(backward<T>(dy, 8, y, 8, dx, 8, -3, 8), "rows (-3) is negative"));
  EXPECT_TRUE(refused_mentioning(backward<T>(dy, 8, y, 8, dx, 8, 4, 0), "cols is 0"));
  EXPECT_TRUE(
      refused(backward<T>(dy, 8, nullptr, 8, dx, 8, 4, 8), "y is null while rows (4) is not 0"));
  EXPECT_TRUE(
      refused(backward<T>(dy, 8, y, 8, nullptr, 8, 4, 8), "dx is null while rows (4) is not 0"));
  EXPECT_TRUE(refused_mentioning(backward<T>(dy, 8, y, 8, fake<T>(0x30001), 8, 4, 8),
                                 "dx (0x30001) is not aligned"));
  EXPECT_TRUE(
      refused(backward<T>(dy, 8, y, 4, dx, 8, 4, 8), "y_row_stride (4) is smaller than cols (8)"));
  EXPECT_TRUE(
      refused(backward<T>(dy, 8, y, 8, dx, 7, 4, 8), "dx_row_stride (7) is smaller than cols (8)"));
  EXPECT_TRUE(refused_mentioning(backward<T>(dy, 8, y, 8, dy, 9, 4, 8),
                                 "dx is dy (in place) but dx_row_stride (9) differs from "
                                 "dy_row_stride (8)"));
  EXPECT_TRUE(refused_mentioning(backward<T>(dy, 8, y, 16, y, 8, 4, 8),
                                 "dx is y (in place) but dx_row_stride (8) differs from "
                                 "y_row_stride (16)"));
  EXPECT_EQ(rowsoftmax::explain_backward<T>(dy, 8, y, 8, dy, 8, 4, 8), nullptr);
  EXPECT_EQ(rowsoftmax::explain_backward<T>(dy, y, dx, 4, 8), nullptr);
}

TYPED_TEST(Validation, ExplainsWorkspaceArguments) {
  using T = TypeParam;
  T* x = fake<T>(0x10000);
  T* y = fake<T>(0x20000);
  std::size_t bytes = 0;
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, nullptr, x, y, 4, 8), bad);
  EXPECT_STREQ(rowsoftmax::explain_forward<T>(nullptr, nullptr, x, y, 4, 8),
               "workspace_bytes is null: it must point to the workspace's size in bytes");
  EXPECT_STREQ(rowsoftmax::explain_backward<T>(nullptr, nullptr, x, y, y, 4, 8),
               "workspace_bytes is null: it must point to the workspace's size in bytes");
  EXPECT_STREQ(rowsoftmax::explain_forward<T>(nullptr, &bytes, x, 8, y, 4, 4, 8),
               "y_row_stride (4) is smaller than cols (8)");
  EXPECT_EQ(rowsoftmax::softmax_forward<T>(nullptr, &bytes, x, 8, y, 4, 4, 8), bad);
  EXPECT_EQ(rowsoftmax::explain_forward<T>(nullptr, &bytes, x, y, 4, 8), nullptr);  // size query
  EXPECT_EQ(rowsoftmax::explain_backward<T>(nullptr, &bytes, x, y, y, 4, 8), nullptr);
}

// The explanation is the launchers' check: over a grid of arguments valid and not, explain gives
// a sentence exactly where detail::validate (what the launchers call first) refuses.
TYPED_TEST(Validation, ExplainAgreesWithValidate) {
  using T = TypeParam;
  namespace d = rowsoftmax::detail;
  const std::uintptr_t bases[] = {0, 0x10000, 0x10001, 0x20000};
  const std::int64_t sizes[] = {-1, 0, 1, 7, 8, std::numeric_limits<std::int64_t>::max() / 4};
  int refused = 0, accepted = 0;
  for (std::uintptr_t xb : bases)
    for (std::uintptr_t yb : bases)
      for (std::int64_t xs : sizes)
        for (std::int64_t ys : sizes)
          for (std::int64_t rows : sizes)
            for (std::int64_t cols : sizes) {
              T* x = fake<T>(xb);
              T* y = fake<T>(yb);
              const d::tensor_arg t[] = {{x, xs, false}, {y, ys, true}};
              bool nothing = false;
              const bool ok = d::validate(t, sizeof(T), rows, cols, &nothing) == cudaSuccess;
              const char* why = rowsoftmax::explain_forward<T>(x, xs, y, ys, rows, cols);
              ASSERT_EQ(ok, why == nullptr) << (why ? why : "") << " rows " << rows << " cols "
                                            << cols << " strides " << xs << ", " << ys;
              (ok ? accepted : refused)++;
            }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}
