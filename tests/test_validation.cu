// SPDX-License-Identifier: Apache-2.0
// Host-only: bad arguments are refused with cudaErrorInvalidValue before any CUDA call, and the
// launchers' caches index only their own slots; these run (and must pass) on machines without a
// GPU.
#include <rowsoftmax/rowsoftmax.cuh>

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
