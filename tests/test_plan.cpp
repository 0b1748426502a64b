// SPDX-License-Identifier: Apache-2.0
// Host-only: the planner over every cols in 1..2^20 for each dtype, layout, direction and
// device kind. Plain C++: plan.hpp needs no CUDA compiler.
#include <rowsoftmax/plan.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>

namespace rs = rowsoftmax;
using rs::algorithm;
using rs::detail::kernel_configs;
using rs::detail::window_capacity;

namespace {

constexpr rs::device_limits h200{132, 90, 16};
constexpr rs::device_limits hopper_portable{132, 90, 8};  // size 16 refused
constexpr rs::device_limits a100{108, 80, 1};

struct case_t {
  std::size_t elem;
  rs::row_layout layout;
};

// Register bytes one thread holds per tensor: 80 to 144 in every tier but the wide clusters' 256
// and 288,
// the budgets the kernels were sized for; the scalar fallback holds bytes / 4 elements.
constexpr int max_bytes_per_thread = 288;

// The first rule a plan breaks, or nullptr. Cheap enough to run 36 million times.
const char* plan_error(rs::plan const& p, std::int64_t rows, std::int64_t cols, case_t c,
                       rs::device_limits const& d) {
  if (p.config < 0 || p.config >= rs::detail::num_kernel_configs) return "config out of range";
  auto const& k = kernel_configs[p.config];
  if (p.algo != k.algo) return "algorithm differs from its configuration";
  if (p.vec != c.layout.vec) return "vector width differs from the layout";
  if (p.vec == 1 && !k.scalar_ok) return "scalar plan on a vector-only configuration";
  if (!rs::detail::plan_holds(p)) return "plan does not hold the row";
  // Windows: the row plus, for shifted rows, the worst head.
  const std::int64_t head = c.layout.shifted && !p.tiled ? c.layout.vec - 1 : 0;
  if (p.windows != (cols + head + c.layout.vec - 1) / c.layout.vec) return "window count";
  // Coverage: one pass holds the row, except for streaming, which loops.
  const std::int64_t held = std::int64_t{p.threads_per_row} * p.vecs_per_thread * p.cluster_size;
  if (p.algo != algorithm::streaming && held < p.windows) return "row does not fit";
  // No idle CTA: one CTA fewer would not hold the row (streaming: no CTA without a tile).
  if ((p.algo == algorithm::cluster || p.algo == algorithm::staged) && p.cluster_size > 1 &&
      std::int64_t{p.threads_per_row} * p.vecs_per_thread * (p.cluster_size - 1) >= p.windows)
    return "a spare CTA";
  if (p.algo == algorithm::streaming &&
      std::int64_t{p.threads_per_row} * p.vecs_per_thread * (p.cluster_size - 1) >= p.windows)
    return "a CTA without a tile";
  // Clusters (registers, staged): every CTA's share of the widest row (the same in every row,
  // passed to the kernel) within its slots, and the shares covering the row.
  if ((p.algo == algorithm::staged || p.algo == algorithm::cluster) &&
      (std::int64_t{rs::detail::share_windows(p)} >
           std::int64_t{p.threads_per_row} * p.vecs_per_thread ||
       std::int64_t{rs::detail::share_windows(p)} * p.cluster_size < p.windows))
    return "a cluster CTA's share beyond its slots, or short of the row";
  // Resources.
  if (p.threads_per_cta > 1024 || p.threads_per_cta % 32 != 0) return "CTA size";
  if (p.rows_per_thread != k.rows_per_thread ||
      p.threads_per_row * p.rows_per_cta != p.threads_per_cta * p.rows_per_thread)
    return "rows per CTA";
  if (p.rows_per_thread > 1 && (p.threads_per_row >= 32 || p.cluster_size > 1 || p.vec == 1))
    return "several rows a thread beyond sub-warp rows of one CTA";
  if (p.tiled != k.tiled) return "tiled differs from its configuration";
  if (p.tiled && !(c.layout.contiguous && p.rows_per_thread > 1 && p.vec > 1))
    return "tiled rows that are not contiguous, or not short";
  const int bytes =
      p.vecs_per_thread * p.rows_per_thread * (p.vec > 1 ? p.vec * static_cast<int>(c.elem) : 4);
  if (p.vecs_per_thread < 1 || bytes != k.bytes || bytes > max_bytes_per_thread)
    return "register bytes per thread";
  // Clusters only where allowed, one row per CTA.
  if (p.cluster_size > (d.compute_capability >= 90 ? d.max_cluster_size : 1)) return "cluster size";
  if (k.clustered && d.compute_capability < 90) return "cluster configuration without clusters";
  if (p.cluster_size > 1 && p.rows_per_cta != 1) return "cluster CTA with several rows";
  // Grid.
  const std::int64_t grid =
      p.rows_per_cta == 1 ? rows * p.cluster_size : (rows + p.rows_per_cta - 1) / p.rows_per_cta;
  if (p.grid_ctas != grid) return "grid size";
  return nullptr;
}

}  // namespace

TEST(Plan, EveryColsUpTo2Pow20CoversTheRowWithinLimits) {
  const rs::device_limits devices[] = {h200, hopper_portable, a100};
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    const int vec = static_cast<int>(16 / elem);
    const case_t cases[] = {{elem, {vec, false}}, {elem, {vec, true}}, {elem, {1, false}}};
    // (Contiguous rows differ from others up to 16 vectors alone, where they are tiled: checked
    // in ShortRowsTakeAVectorAThreadAndEightRows.)
    for (auto const& d : devices)
      for (auto const& c : cases)
        for (auto dir : {rs::direction::forward, rs::direction::backward})
          for (std::int64_t cols = 1; cols <= (std::int64_t{1} << 20); ++cols) {
            const rs::plan p = rs::plan_for(dir, 7, cols, elem, c.layout, d);
            const char* err = plan_error(p, 7, cols, c, d);
            if (!err && !rs::detail::has_kernel(p.config, dir, c.layout.vec, elem))
              err = "a configuration without a kernel for the direction, width and type";
            ASSERT_EQ(err, nullptr)
                << err << ": cols=" << cols << " elem=" << elem << " vec=" << c.layout.vec
                << " shifted=" << c.layout.shifted << " cc=" << d.compute_capability
                << " max_cluster=" << d.max_cluster_size << " plan=" << rs::to_string(p);
          }
  }
}

// Rows of at most 16 vectors take one vector a thread, 8 rows a thread, in the fewest threads (a
// power of two) that hold the row, tiled where they are misaligned and contiguous (up to 8 vectors
// forward, 4 backward, 16-bit only); longer rows, other misaligned 16-bit rows and the scalar
// fallback, one row a thread.
TEST(Plan, ShortRowsTakeAVectorAThreadAndEightRows) {
  for (int c = rs::detail::configs::first_short_rows; c <= rs::detail::configs::last_short_rows;
       ++c) {
    auto const& k = kernel_configs[c];
    EXPECT_EQ(k.algo, algorithm::registers);
    EXPECT_EQ(k.threads_per_row, 1 << (c - rs::detail::configs::first_short_rows));
    EXPECT_EQ(k.rows_per_thread, 8);
    EXPECT_FALSE(k.clustered);
    EXPECT_FALSE(k.scalar_ok);
  }
  // The tiled ones: the same threads and rows, copied through shared memory.
  for (int c = rs::detail::configs::first_tiled; c <= rs::detail::configs::last_tiled; ++c) {
    auto const& k = kernel_configs[c];
    auto const& untiled = kernel_configs[c - rs::detail::configs::first_tiled +
                                         rs::detail::configs::first_short_rows];
    EXPECT_TRUE(k.tiled);
    EXPECT_EQ(k.algo, untiled.algo);
    EXPECT_EQ(k.threads_per_row, untiled.threads_per_row);
    EXPECT_EQ(k.bytes, untiled.bytes);
    EXPECT_EQ(k.threads_per_cta, untiled.threads_per_cta);
    EXPECT_EQ(k.rows_per_thread, untiled.rows_per_thread);
    EXPECT_EQ(k.clustered, untiled.clustered);
    EXPECT_EQ(k.scalar_ok, untiled.scalar_ok);
  }
  for (int c : {rs::detail::configs::staged_40KB, rs::detail::configs::staged_48KB}) {
    auto const& k = kernel_configs[c];
    EXPECT_EQ(k.algo, algorithm::staged);
    EXPECT_EQ(k.bytes, c == rs::detail::configs::staged_40KB ? 160 : 192);
    EXPECT_EQ(rs::detail::ctas_per_sm(k, 1, 2), c == rs::detail::configs::staged_40KB ? 5 : 4);
    EXPECT_TRUE(k.clustered);
  }
  for (int c : {rs::detail::configs::cluster_256t_144B, rs::detail::configs::cluster_256t_288B}) {
    auto const& k = kernel_configs[c];
    EXPECT_EQ(k.algo, algorithm::cluster);
    EXPECT_EQ(k.bytes, c == rs::detail::configs::cluster_256t_144B ? 144 : 288);
    EXPECT_EQ(k.threads_per_cta, 256);
    EXPECT_EQ(k.threads_per_row, 256);
    EXPECT_TRUE(k.clustered);
    EXPECT_FALSE(k.scalar_ok);
  }
  for (int c = 0; c < rs::detail::num_kernel_configs; ++c) {
    if (c < rs::detail::configs::first_short_rows || c > rs::detail::configs::last_tiled) {
      EXPECT_EQ(kernel_configs[c].rows_per_thread, 1) << "config " << c;
    }
    EXPECT_EQ(kernel_configs[c].tiled,
              c >= rs::detail::configs::first_tiled && c <= rs::detail::configs::last_tiled)
        << "config " << c;
  }
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (int vec : {static_cast<int>(16 / elem), 1})
      for (bool shifted : {false, true})
        for (bool contiguous : {false, true})
          for (auto dir : {rs::direction::forward, rs::direction::backward})
            for (std::int64_t cols = 1; cols <= 300; ++cols) {
              if (vec == 1 && (shifted || contiguous)) continue;
              const rs::plan p =
                  rs::plan_for(dir, 100, cols, elem, {vec, shifted, contiguous}, h200);
              SCOPED_TRACE("cols=" + std::to_string(cols) + " elem=" + std::to_string(elem) +
                           " vec=" + std::to_string(vec) + " shifted=" + std::to_string(shifted) +
                           " contiguous=" + std::to_string(contiguous) + " " + rs::to_string(p));
              const bool fwd = dir == rs::direction::forward;
              const bool tiled = vec > 1 && shifted && contiguous &&
                                 (cols + vec - 1) / vec <= (fwd ? 8 : 4) && (fwd || elem == 2);
              ASSERT_EQ(p.tiled, tiled);
              if (tiled || (vec > 1 && (elem == 4 || !shifted) && p.windows <= 16)) {
                const int first = tiled ? rs::detail::configs::first_tiled
                                        : rs::detail::configs::first_short_rows;
                ASSERT_GE(p.config, first);
                ASSERT_LE(p.config, first + (tiled ? (fwd ? 3 : 2) : 4));
                ASSERT_EQ(p.vecs_per_thread, 1);
                ASSERT_EQ(p.rows_per_thread, 8);
                ASSERT_GE(p.threads_per_row, p.windows);
                ASSERT_LT(p.threads_per_row, 2 * p.windows);
                ASSERT_EQ(p.grid_ctas, (100 + p.rows_per_cta - 1) / p.rows_per_cta);
                const char* err =
                    plan_error(p, 100, cols, {elem, {vec, shifted, contiguous}}, h200);
                ASSERT_EQ(err, nullptr) << err;
              } else {
                ASSERT_EQ(p.rows_per_thread, 1);
              }
            }
}

TEST(Plan, RegisterTierIsTheSmallestThatFits) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (int vec : {static_cast<int>(16 / elem), 1}) {
      // The one-CTA configurations hold more windows in table order, so the first planned
      // one that holds a row is the smallest.
      for (int c = rs::detail::configs::first_one_cta + 1; c <= rs::detail::configs::widest_one_cta;
           ++c)
        EXPECT_LE(window_capacity(kernel_configs[c - 1], vec, elem),
                  window_capacity(kernel_configs[c], vec, elem))
            << "config " << c;
      for (auto dir : {rs::direction::forward, rs::direction::backward})
        for (bool shifted : {false, true}) {
          if (vec == 1 && shifted) continue;
          for (std::int64_t cols = 1; cols <= 40000; ++cols) {
            const rs::plan p = rs::plan_for(dir, 5, cols, elem, {vec, shifted}, h200);
            if (!rs::detail::configs::is_one_cta(p.config)) continue;
            ASSERT_TRUE(rs::detail::has_kernel(p.config, dir, vec, elem));
            // No planned configuration before it would have held the row.
            for (int c = rs::detail::configs::first_one_cta; c < p.config; ++c) {
              if (!rs::detail::has_kernel(c, dir, vec, elem)) continue;
              ASSERT_LT(window_capacity(kernel_configs[c], vec, elem), p.windows)
                  << "cols=" << cols << " config " << c << " before " << p.config;
            }
          }
        }
    }
}

// The one-CTA configurations with kernels: 16-bit rows all but backward 144 bytes at 32 threads
// or fewer; fp32 rows 128 bytes from 4 threads (fewer: short rows) and 80 and 144 bytes at 32
// threads or more; the scalar fallback those of 128 bytes.
TEST(Plan, OneCtaConfigurationsPlannedForEachType) {
  for (int c = rs::detail::configs::first_one_cta; c <= rs::detail::configs::widest_one_cta; ++c) {
    auto const& k = kernel_configs[c];
    SCOPED_TRACE(c);
    const bool whole_warps = k.threads_per_row >= 32;
    for (auto dir : {rs::direction::forward, rs::direction::backward}) {
      EXPECT_EQ(rs::detail::has_kernel(c, dir, 8, 2),
                !(dir == rs::direction::backward && k.bytes == 144 && k.threads_per_row <= 32));
      EXPECT_EQ(rs::detail::has_kernel(c, dir, 4, 4),
                (k.bytes == 128 && k.threads_per_row >= 4) ||
                    (whole_warps && (k.bytes == 80 || k.bytes == 144)));
      EXPECT_EQ(rs::detail::has_kernel(c, dir, 1, 2), k.scalar_ok);
      EXPECT_EQ(k.scalar_ok, k.bytes == 128);
    }
  }
}

// Rows of one CTA take 80-144 bytes a thread, so that few of their slots are idle: 16-bit rows
// of 4 threads or more fill more than four fifths of them, fp32 rows of whole warps (no 96 or
// 112 bytes) more than five eighths; with 128 bytes alone, rows just above a power of two filled
// half.
TEST(Plan, RowsOfOneCtaLeaveFewSlotsIdle) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    const int vec = static_cast<int>(16 / elem);
    for (bool shifted : {false, true})
      for (auto dir : {rs::direction::forward, rs::direction::backward})
        for (std::int64_t cols = 1; cols <= 16384; ++cols) {
          const rs::plan p = rs::plan_for(dir, 5, cols, elem, {vec, shifted}, h200);
          // (Short rows, 8 a thread, leave at most half their threads idle:
          // configs::first_short_rows.)
          if (p.algo != algorithm::registers || p.rows_per_thread > 1 ||
              p.threads_per_row < (elem == 2 ? 4 : 32))
            continue;
          const std::int64_t slots = std::int64_t{p.threads_per_row} * p.vecs_per_thread;
          if (elem == 2) {
            ASSERT_GT(5 * p.windows, 4 * slots) << "cols=" << cols << " " << rs::to_string(p);
          } else {
            ASSERT_GT(8 * p.windows, 5 * slots) << "cols=" << cols << " " << rs::to_string(p);
          }
        }
  }
}

TEST(Plan, TiersOnH200) {
  const auto fwd = [](std::size_t elem, std::int64_t cols, rs::device_limits d = h200) {
    return rs::plan_for(rs::direction::forward, 1024, cols, elem, {int(16 / elem), false}, d);
  };
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    SCOPED_TRACE(elem);
    const std::int64_t n = 128 / static_cast<std::int64_t>(elem);  // elements a thread holds
    // Short rows (at most 16 vectors): one vector a thread, as many threads as vectors (a power
    // of two), 8 rows a thread, 128-thread CTAs.
    const std::int64_t v = 16 / static_cast<std::int64_t>(elem);
    EXPECT_EQ(fwd(elem, 1).threads_per_row, 1);
    EXPECT_EQ(fwd(elem, 1).vecs_per_thread, 1);
    EXPECT_EQ(fwd(elem, 1).rows_per_thread, 8);
    EXPECT_EQ(fwd(elem, 1).rows_per_cta, 1024);
    EXPECT_EQ(fwd(elem, v).threads_per_row, 1);
    EXPECT_EQ(fwd(elem, v + 1).threads_per_row, 2);
    EXPECT_EQ(fwd(elem, 3 * v).threads_per_row, 4);
    EXPECT_EQ(fwd(elem, n).threads_per_row, 8);
    EXPECT_EQ(fwd(elem, n + 1).threads_per_row, 16);
    EXPECT_EQ(fwd(elem, 2 * n).threads_per_row, 16);
    EXPECT_EQ(fwd(elem, 2 * n).rows_per_cta, 64);
    EXPECT_EQ(rs::to_string(fwd(elem, 2 * n)),
              "registers cta=128 tpr=16 vec=" + std::to_string(v) + "x1 rows=8");
    EXPECT_EQ(rs::plan_for(rs::direction::backward, 1024, 2 * n - v + 1, elem, {int(v), true}, h200)
                  .rows_per_thread,
              elem == 2 ? 1 : 8);  // misaligned: fp32 16 threads, 16-bit one row a thread
    // Misaligned contiguous rows (no head peeled): tiled forward up to 8 vectors, backward up to
    // 4 (16-bit only).
    const rs::row_layout contiguous{int(v), true, true};
    EXPECT_EQ(rs::to_string(rs::plan_for(rs::direction::forward, 1024, n, elem, contiguous, h200)),
              "registers cta=128 tpr=8 vec=" + std::to_string(v) + "x1 rows=8 tiled head");
    EXPECT_EQ(rs::plan_for(rs::direction::backward, 1024, n / 2, elem, contiguous, h200).tiled,
              elem == 2);
    EXPECT_EQ(rs::plan_for(rs::direction::backward, 1024, n / 2 + 1, elem, contiguous, h200).tiled,
              false);
    EXPECT_EQ(rs::plan_for(rs::direction::forward, 1024, n + 1, elem, contiguous, h200).tiled,
              false);  // 9 vectors: 16-bit one row a thread, fp32 8 a thread untiled
    EXPECT_EQ(
        rs::plan_for(rs::direction::forward, 1024, n + 1, elem, contiguous, h200).rows_per_thread,
        elem == 2 ? 1 : 8);
    EXPECT_EQ(
        rs::plan_for(rs::direction::forward, 1024, 2 * n, elem, {1, false}, h200).rows_per_thread,
        1);  // the scalar fallback: one row a thread
    // Longer sub-warp rows: several rows per CTA, 128 bytes (32 fp32, 64 bf16/fp16) per thread.
    EXPECT_EQ(fwd(elem, 8 * n).threads_per_row, 8);
    EXPECT_EQ(fwd(elem, 8 * n).rows_per_cta, 16);
    EXPECT_EQ(fwd(elem, 8 * n).rows_per_thread, 1);
    EXPECT_EQ(fwd(elem, 8 * n).vecs_per_thread * fwd(elem, 8 * n).vec, n);
    // 16-bit rows of 4 threads or more: 5 to 9 vectors a thread, still 128-thread CTAs; fp32 rows
    // of fewer than 32 threads 8 vectors alone.
    const int eight_or = elem == 2 ? 0 : 8;  // fp32's vectors where 16-bit rows take fewer or more
    EXPECT_EQ(fwd(elem, 2 * n + 1).threads_per_row, 4);
    EXPECT_EQ(fwd(elem, 2 * n + 1).vecs_per_thread, eight_or ? 8 : 5);
    EXPECT_EQ(fwd(elem, 2 * n + 1).threads_per_cta, 128);
    EXPECT_EQ(fwd(elem, 8 * n + 1).threads_per_row, eight_or ? 16 : 8);
    EXPECT_EQ(fwd(elem, 8 * n + 1).vecs_per_thread, eight_or ? 8 : 9);
    EXPECT_EQ(fwd(elem, 8 * n + 1).rows_per_cta, eight_or ? 8 : 16);
    EXPECT_EQ(fwd(elem, 9 * n + 1).threads_per_row, 16);
    EXPECT_EQ(fwd(elem, 9 * n + 1).vecs_per_thread, eight_or ? 8 : 5);
    EXPECT_EQ(fwd(elem, 10 * n + 1).vecs_per_thread, eight_or ? 8 : 6);
    EXPECT_EQ(fwd(elem, 16 * n + 1).threads_per_row, eight_or ? 32 : 16);
    EXPECT_EQ(fwd(elem, 16 * n + 1).vecs_per_thread, eight_or ? 5 : 9);
    // 16-bit backward: no 144 bytes at 32 threads or fewer.
    const rs::plan b = rs::plan_for(rs::direction::backward, 1024, 16 * n + 1, elem,
                                    {int(16 / elem), false}, h200);
    EXPECT_EQ(b.threads_per_row, 32);
    EXPECT_EQ(b.vecs_per_thread, 5);
    // Whole warps: powers of two, several rows to a 256-thread CTA, 5 to 9 vectors a thread.
    EXPECT_EQ(fwd(elem, 18 * n + 1).threads_per_row, 32);
    EXPECT_EQ(fwd(elem, 18 * n + 1).rows_per_cta, 8);
    EXPECT_EQ(fwd(elem, 18 * n + 1).vecs_per_thread, 5);
    EXPECT_EQ(fwd(elem, 20 * n + 1).vecs_per_thread, elem == 2 ? 6 : 8);  // fp32: no 96 bytes
    EXPECT_EQ(fwd(elem, 32 * n).vecs_per_thread, 8);
    EXPECT_EQ(fwd(elem, 32 * n + 1).threads_per_row, 32);
    EXPECT_EQ(fwd(elem, 32 * n + 1).vecs_per_thread, 9);
    EXPECT_EQ(fwd(elem, 36 * n + 1).threads_per_row, 64);
    EXPECT_EQ(fwd(elem, 36 * n + 1).rows_per_cta, 4);
    EXPECT_EQ(fwd(elem, 36 * n + 1).vecs_per_thread, 5);
    EXPECT_EQ(fwd(elem, 64 * n + 1).threads_per_row, 64);
    EXPECT_EQ(fwd(elem, 64 * n + 1).vecs_per_thread, 9);
    EXPECT_EQ(fwd(elem, 72 * n + 1).threads_per_row, 128);
    EXPECT_EQ(fwd(elem, 72 * n + 1).rows_per_cta, 2);
    EXPECT_EQ(fwd(elem, 144 * n + 1).threads_per_row, 256);
    EXPECT_EQ(fwd(elem, 144 * n + 1).vecs_per_thread, 5);
    // One 256-thread CTA holds 32 KB at 128 bytes a thread (8K fp32, 16K bf16/fp16 elements),
    // 36 KB at 144 (9K, 18K); clusters beyond (in registers for fp32; 16-bit rows are staged,
    // see below).
    EXPECT_EQ(fwd(elem, 256 * n).algo, algorithm::registers);
    EXPECT_EQ(fwd(elem, 256 * n).threads_per_cta, 256);
    EXPECT_EQ(fwd(elem, 256 * n).vecs_per_thread, 8);
    for (std::int64_t cols : {256 * n + 1, 288 * n}) {
      EXPECT_EQ(fwd(elem, cols).algo, algorithm::registers);
      EXPECT_EQ(fwd(elem, cols).threads_per_row, 256);
      EXPECT_EQ(fwd(elem, cols).vecs_per_thread, 9);
    }
    EXPECT_EQ(fwd(elem, 288 * n + 1).algo, elem == 4 ? algorithm::cluster : algorithm::staged);
    if (elem == 2) continue;
    // Just above one CTA: three 128-thread CTAs (2305 of 3072 slots used) rather than two of
    // 256 (of 4096).
    EXPECT_EQ(fwd(elem, 288 * n + 1).cluster_size, 3);
    EXPECT_EQ(fwd(elem, 288 * n + 1).threads_per_cta, 128);
    EXPECT_EQ(fwd(elem, 512 * n).cluster_size, 2);
    EXPECT_EQ(fwd(elem, 512 * n).threads_per_cta, 256);
    EXPECT_EQ(fwd(elem, 512 * n + 1).cluster_size, 5);
    EXPECT_EQ(fwd(elem, 2048 * n).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 2048 * n).vecs_per_thread * fwd(elem, 2048 * n).vec, n);
    // More than 8 such CTAs (in a launch of more CTAs than SMs): fewer of 256 or 288 bytes a
    // thread, 288 where they take fewer CTAs that the H200 runs about as fully at once (clusters
    // of 4 at 94% of its slots against 5 at 89%).
    EXPECT_EQ(fwd(elem, 2048 * n + 1).cluster_size, 4);
    EXPECT_EQ(fwd(elem, 2048 * n + 1).config, rs::detail::configs::cluster_256t_288B);
    EXPECT_EQ(fwd(elem, 2048 * n + 1).vecs_per_thread * fwd(elem, 2048 * n + 1).vec, 9 * n / 4);
    EXPECT_EQ(fwd(elem, 4096 * n).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 4096 * n).config,
              rs::detail::configs::cluster_256t_256B);  // 8 CTAs either way
    // Vocabulary rows: as many CTAs as they need.
    EXPECT_EQ(fwd(elem, 32000).cluster_size, 4);  // staged: 1024 rows (Fp32ForwardStagedInMid...)
    EXPECT_EQ(fwd(elem, 32000).algo, algorithm::staged);
    // 50257 columns in 1024 rows: 7 staged CTAs (7168 in all, at most 60 an SM); in the 2^27
    // launch (2670 rows) 4 CTAs of 256 bytes a thread, not 13 of 128 threads (nor 3 of 288:
    // clusters of 3 fill 90% of the H200 at once, of 4 94%).
    EXPECT_EQ(fwd(elem, 50257).algo, algorithm::staged);
    EXPECT_EQ(fwd(elem, 50257).cluster_size, 7);
    EXPECT_EQ(rs::plan_for(rs::direction::forward, 2670, 50257, elem, {4, false}, h200).config,
              rs::detail::configs::cluster_256t_256B);
    EXPECT_EQ(
        rs::plan_for(rs::direction::forward, 2670, 50257, elem, {4, false}, h200).cluster_size, 4);
    // 128256: 8 CTAs of 256 bytes (91%), not 7 of 288 (85%).
    EXPECT_EQ(fwd(elem, 128256).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 128256).threads_per_cta, 256);
    EXPECT_EQ(fwd(elem, 128256).vecs_per_thread * fwd(elem, 128256).vec, 2 * n);
    // 8 of 288 (91%) rather than 9 of 256 (78%), 9 (78%) rather than 10 (80%).
    EXPECT_EQ(fwd(elem, 4096 * n + 1).vecs_per_thread * fwd(elem, 4096 * n + 1).vec, 9 * n / 4);
    EXPECT_EQ(fwd(elem, 4096 * n + 1).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 151936).cluster_size, 9);
    EXPECT_EQ(fwd(elem, 151936).config, rs::detail::configs::cluster_256t_288B);
    // 16 of 256 (85%) rather than 15 of 288 (80%).
    EXPECT_EQ(fwd(elem, 8192 * n).algo, algorithm::cluster);
    EXPECT_EQ(fwd(elem, 8192 * n).config, rs::detail::configs::cluster_256t_256B);
    EXPECT_EQ(fwd(elem, 8192 * n).cluster_size, 16);
    // Beyond 16 CTAs of 256 bytes, those of 288.
    EXPECT_EQ(fwd(elem, 8192 * n + 1).config, rs::detail::configs::cluster_256t_288B);
    EXPECT_EQ(fwd(elem, 8192 * n + 1).cluster_size, 15);
    EXPECT_EQ(fwd(elem, 9216 * n).cluster_size, 16);
    EXPECT_EQ(fwd(elem, 9216 * n).algo, algorithm::cluster);
    // Then streaming in tiles of 256 threads x 128 bytes: 37 tiles over 16 CTAs, each keeping
    // one tile in registers and, forward, at most one in shared memory.
    EXPECT_EQ(fwd(elem, 9216 * n + 1).algo, algorithm::streaming);
    EXPECT_EQ(fwd(elem, 9216 * n + 1).cluster_size, 16);
    EXPECT_EQ(fwd(elem, 9216 * n + 1).stash_tiles, 1);
    EXPECT_EQ(fwd(elem, 65536 * n).stash_tiles, 1);  // 256 tiles, 16 a CTA
    // Without size-16 clusters: up to 8, then streaming through clusters of up to 8.
    EXPECT_EQ(fwd(elem, 2048 * n, hopper_portable).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 2048 * n, hopper_portable).vecs_per_thread *
                  fwd(elem, 2048 * n, hopper_portable).vec,
              n);
    EXPECT_EQ(fwd(elem, 2048 * n + 1, hopper_portable).cluster_size, 4);  // 288 bytes a thread
    EXPECT_EQ(fwd(elem, 4096 * n + 1, hopper_portable).cluster_size, 8);
    EXPECT_EQ(fwd(elem, 4096 * n + 1, hopper_portable).config,
              rs::detail::configs::cluster_256t_288B);
    EXPECT_EQ(fwd(elem, 4608 * n + 1, hopper_portable).algo, algorithm::streaming);
    EXPECT_EQ(fwd(elem, 4608 * n + 1, hopper_portable).cluster_size, 8);
    // Without clusters (sm_80): one 512-thread CTA up to twice a CTA, then one CTA streams.
    EXPECT_EQ(fwd(elem, 512 * n, a100).algo, algorithm::registers);
    EXPECT_EQ(fwd(elem, 512 * n, a100).threads_per_cta, 512);
    EXPECT_EQ(fwd(elem, 512 * n + 1, a100).algo, algorithm::streaming);
    EXPECT_EQ(fwd(elem, 512 * n + 1, a100).cluster_size, 1);
  }
}

TEST(Plan, ShiftedRowsReserveAHeadWindow) {
  // 2048 fp32 columns fill 512 vectors exactly; a misaligned row start needs one more.
  const auto aligned = rs::plan_for(rs::direction::forward, 3, 2048, 4, {4, false}, h200);
  const auto shifted = rs::plan_for(rs::direction::forward, 3, 2048, 4, {4, true}, h200);
  EXPECT_EQ(aligned.windows, 512);
  EXPECT_EQ(shifted.windows, 513);
  EXPECT_GT(window_capacity(kernel_configs[shifted.config], 4, 4), 512);
}

TEST(Plan, ScalarFallbackStreamsLongRowsThroughClustersOnlyWhenTheyHaveWork) {
  const auto p = [](std::int64_t cols) {
    return rs::plan_for(rs::direction::forward, 3, cols, 2, {1, false}, h200);
  };
  // Scalar slots: 32 elements per thread, up to 256 threads; beyond, tiles of 8192 elements,
  // one a CTA (16-bit forward keeps none in registers: a CTA stashes its tile in shared memory,
  // at most one, and reads the others twice).
  EXPECT_EQ(p(8192).algo, algorithm::registers);
  EXPECT_EQ(p(8193).algo, algorithm::streaming);
  EXPECT_EQ(p(8193).cluster_size, 2);        // two tiles
  EXPECT_EQ(p(8192 * 9).cluster_size, 9);    // nine tiles
  EXPECT_EQ(p(8192 * 17).cluster_size, 16);  // seventeen tiles
  EXPECT_EQ(p(8192 * 9).stash_tiles, 1);
  EXPECT_EQ(p(8192 * 17).stash_tiles, 1);  // two tiles a CTA, one read twice
  // Backward keeps one tile in shared memory and one in registers: 17 tiles over 9 CTAs.
  const auto b = rs::plan_for(rs::direction::backward, 3, 8192 * 17, 2, {1, false}, h200);
  EXPECT_EQ(b.cluster_size, 9);
  EXPECT_EQ(b.stash_tiles, 1);
  const auto a = rs::plan_for(rs::direction::forward, 3, 8193, 2, {1, false}, a100);
  EXPECT_EQ(a.cluster_size, 1);
}

TEST(Plan, WideForwardClustersForLongRowsInFullerLaunches) {
  const auto plan = [](rs::direction dir, std::int64_t rows, std::int64_t cols) {
    return rs::plan_for(dir, rows, cols, 4, {4, false}, h200);
  };
  // fp32 forward at 128256 columns: 16 CTAs of 128 bytes a thread, or 8 of 256.
  for (std::int64_t rows : {1, 4, 6}) {  // up to 96 CTAs: no more than 3/4 of the SMs (99)
    EXPECT_EQ(plan(rs::direction::forward, rows, 128256).cluster_size, 16);
    EXPECT_EQ(plan(rs::direction::forward, rows, 128256).vecs_per_thread, 8);
  }
  for (std::int64_t rows : {7, 8, 9, 24, 1046}) {  // 32 to 495 rows: staged (below)
    EXPECT_EQ(plan(rs::direction::forward, rows, 128256).cluster_size, 8);
    EXPECT_EQ(plan(rs::direction::forward, rows, 128256).vecs_per_thread, 16);
  }
  // 100000 columns: 13 CTAs of 128 bytes a thread up to 7 rows (91 CTAs), then 6 of 288 (the
  // H200 runs clusters of 6 and 7 such CTAs, 78 and 64 at once, about as fully: 89% and 85%).
  EXPECT_EQ(plan(rs::direction::forward, 7, 100000).cluster_size, 13);
  EXPECT_EQ(plan(rs::direction::forward, 8, 100000).cluster_size, 6);
  EXPECT_EQ(plan(rs::direction::forward, 8, 100000).vecs_per_thread, 18);
  // 50257 columns, aligned: 13 CTAs of 128 threads (fewer idle slots than 7 of 256) up to 56
  // rows; 57 to 1131 rows take 7 staged CTAs a row (Fp32ForwardStagedInMidLaunches), and longer
  // launches 4 CTAs of 256 bytes a thread.
  for (std::int64_t rows : {1, 20, 21, 40, 56}) {
    EXPECT_EQ(plan(rs::direction::forward, rows, 50257).config, rs::detail::configs::cluster_128t);
    EXPECT_EQ(plan(rs::direction::forward, rows, 50257).cluster_size, 13);
  }
  for (std::int64_t rows : {1132, 2670}) {
    EXPECT_EQ(plan(rs::direction::forward, rows, 50257).config,
              rs::detail::configs::cluster_256t_256B);
    EXPECT_EQ(plan(rs::direction::forward, rows, 50257).cluster_size, 4);
  }
  // Backward keeps 128 bytes a thread a tensor; 8 CTAs of them stay so in every direction.
  EXPECT_EQ(plan(rs::direction::backward, 1046, 128256).cluster_size, 16);
  EXPECT_EQ(plan(rs::direction::backward, 1046, 128256).vecs_per_thread, 8);
  EXPECT_EQ(plan(rs::direction::backward, 8, 128256).cluster_size, 16);
  EXPECT_EQ(plan(rs::direction::forward, 1046, 65536).cluster_size, 8);
  EXPECT_EQ(plan(rs::direction::forward, 1046, 65536).vecs_per_thread, 8);
}

TEST(Plan, Fp32ForwardClustersOf288BytesWhereTheyFillTheDeviceAsWell) {
  const auto fwd = [](std::int64_t rows, std::int64_t cols, rs::device_limits const& d = h200,
                      std::size_t elem = 4) {
    const int vec = static_cast<int>(16 / elem);
    return rs::plan_for(rs::direction::forward, rows, cols, elem, {vec, cols % vec != 0}, d);
  };
  // The H200's clusters at two CTAs an SM: of 8 fill 91% of its slots at once, of 9 78%, of 10
  // 80%, of 11 67%, of 12 73%, of 13 69%, of 15 80%, of 16 85%.
  EXPECT_EQ(rs::detail::cluster_fill(h200, 1), 1000);
  EXPECT_EQ(rs::detail::cluster_fill(h200, 8), 909);
  EXPECT_EQ(rs::detail::cluster_fill(h200, 11), 666);
  EXPECT_EQ(rs::detail::cluster_fill(h200, 16), 848);
  // Columns (rows*cols = 2^27), then the CTAs of 288 bytes a thread planned, or 0 for 256
  // bytes (measured both ways on the H200: docs/tuning.md).
  const std::pair<std::int64_t, int> cases[] = {
      {65537, 4},  {98305, 6},  {110000, 6},  {128256, 0},  {131073, 8},  {147457, 9},
      {151936, 9}, {163841, 9}, {180000, 10}, {196608, 0},  {196609, 11}, {212000, 12},
      {229377, 0}, {240000, 0}, {262144, 0},  {262143, 15}, {290000, 16}};
  for (auto [cols, ctas] : cases) {
    const std::int64_t rows = (std::int64_t{1} << 27) / cols;
    const rs::plan p = fwd(rows, cols);
    SCOPED_TRACE(std::to_string(cols) + ": " + rs::to_string(p));
    EXPECT_EQ(p.config, ctas > 0 ? rs::detail::configs::cluster_256t_288B
                                 : rs::detail::configs::cluster_256t_256B);
    if (ctas > 0) {
      EXPECT_EQ(p.cluster_size, ctas);
      EXPECT_EQ(p.vecs_per_thread, 18);
    }
    // Where nothing is known of the device's clusters, 288 bytes wherever they take fewer CTAs.
    rs::device_limits unknown = h200;
    for (int& c : unknown.clusters_at_two_an_sm) c = 0;
    const rs::plan q = fwd(rows, cols, unknown);
    const std::int64_t w = q.windows;
    EXPECT_EQ(q.config, (w + 4607) / 4608 < (w + 4095) / 4096 || w > 16 * 4096
                            ? rs::detail::configs::cluster_256t_288B
                            : rs::detail::configs::cluster_256t_256B);
  }
  // A device whose clusters of 9 fill it less than those of 11: 256 bytes at 163841.
  rs::device_limits other = h200;
  other.clusters_at_two_an_sm[9] = 12;
  EXPECT_EQ(fwd(512, 163841, other).config, rs::detail::configs::cluster_256t_256B);
  EXPECT_EQ(fwd(512, 163841, other).cluster_size, 11);
  // Neither 16-bit forward (staged) nor backward.
  for (std::int64_t cols : {163841, 262143, 524288}) {
    EXPECT_NE(fwd(512, cols, h200, 2).config, rs::detail::configs::cluster_256t_288B);
    EXPECT_NE(rs::plan_for(rs::direction::backward, 512, cols, 4, {4, false}, h200).config,
              rs::detail::configs::cluster_256t_288B);
  }
  // Launches of a few rows that take 128-thread CTAs keep them (128256, rows 1-6: 16 CTAs).
  EXPECT_EQ(fwd(1, 128256).config, rs::detail::configs::cluster_256t);
}

TEST(Plan, BackwardClustersOf144BytesForRowsThe128ByteClustersDoNotHold) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    SCOPED_TRACE(elem);
    const std::int64_t v = 16 / static_cast<std::int64_t>(elem);
    const auto bwd = [&](std::int64_t cols, bool shifted = false,
                         rs::device_limits const& d = h200) {
      return rs::plan_for(rs::direction::backward, 512, cols, elem, {int(v), shifted}, d);
    };
    const std::int64_t most128 = 16 * 256 * 8 * v, most144 = 16 * 256 * 9 * v;
    EXPECT_EQ(bwd(most128).config, rs::detail::configs::cluster_256t);
    EXPECT_EQ(bwd(most128).cluster_size, 16);
    EXPECT_EQ(bwd(most128 + 1).config, rs::detail::configs::cluster_256t_144B);
    EXPECT_EQ(bwd(most128 + 1).cluster_size, 15);
    EXPECT_EQ(bwd(most128 - 1, true).config,
              rs::detail::configs::cluster_256t_144B);  // a head: 1 more
    EXPECT_EQ(bwd(most144).config, rs::detail::configs::cluster_256t_144B);
    EXPECT_EQ(bwd(most144).cluster_size, 16);
    EXPECT_EQ(bwd(most144).vecs_per_thread, 9);
    EXPECT_EQ(bwd(most144 + 1).algo, algorithm::streaming);
    EXPECT_EQ(bwd(most144 - 1, true).algo, algorithm::streaming);
    // The same with or without a workspace: read once.
    const rs::plan w =
        rs::plan_for(rs::direction::backward, 512, most144, elem, {int(v), false}, h200, true);
    EXPECT_EQ(w.config, rs::detail::configs::cluster_256t_144B);
    EXPECT_EQ(w.workspace_bytes, 0);
    // Rows the 128-byte clusters hold keep them, and 16-bit rows of 11 or 12 of them stream.
    EXPECT_EQ(bwd(most128 / 2 + 1).config, rs::detail::configs::cluster_256t);
    if (elem == 2) {
      EXPECT_EQ(bwd(163841, true).algo, algorithm::streaming);
    }
    // Clusters of up to 8: beyond 8 CTAs of 128 bytes.
    EXPECT_EQ(bwd(most128 / 2 + 1, false, hopper_portable).config,
              rs::detail::configs::cluster_256t_144B);
    EXPECT_EQ(bwd(most128 / 2 + 1, false, hopper_portable).cluster_size, 8);
    EXPECT_EQ(bwd(most144 / 2 + 1, false, hopper_portable).algo, algorithm::streaming);
    // Not forward, nor without clusters.
    EXPECT_NE(
        rs::plan_for(rs::direction::forward, 512, most128 + 1, elem, {int(v), false}, h200).config,
        rs::detail::configs::cluster_256t_144B);
    EXPECT_EQ(bwd(most128 + 1, false, a100).algo, algorithm::streaming);
  }
}

TEST(Plan, FewForwardRowsTakeTheMost128ThreadCtas) {
  // Forward rows beyond one CTA, in launches of at most two 128-thread CTAs an SM (264 on the
  // H200): the fewest such CTAs (16 KB of the row each) that hold the row, up to 16.
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    const int vec = static_cast<int>(16 / elem);
    const std::int64_t narrow = 16384 / static_cast<std::int64_t>(elem);  // elements a CTA holds
    for (bool shifted : {false, true})
      for (std::int64_t cols = 2 * narrow - 64; cols <= 16 * narrow; cols += 61) {
        const std::int64_t windows = rs::detail::ceil_div(cols + (shifted ? vec - 1 : 0), vec);
        const std::int64_t n = rs::detail::ceil_div(windows, 128 * 8);
        if (windows <= 256 * 8 || n > 16) continue;  // one 256-thread CTA holds it; or 17 CTAs
        for (std::int64_t rows : {std::int64_t{1}, 264 / n, 264 / n + 1}) {
          const auto p =
              rs::plan_for(rs::direction::forward, rows, cols, elem, {vec, shifted}, h200);
          SCOPED_TRACE("elem=" + std::to_string(elem) + " rows=" + std::to_string(rows) +
                       " cols=" + std::to_string(cols) + " " + rs::to_string(p));
          if (rows * n <= 264) {
            ASSERT_EQ(p.config, rs::detail::configs::cluster_128t);
            ASSERT_EQ(p.cluster_size, n);
            ASSERT_EQ(p.threads_per_cta, 128);
          } else if (elem == 2) {
            ASSERT_NE(p.config, rs::detail::configs::cluster_128t);  // staged
          }
        }
      }
  }
  const auto fwd = [](std::int64_t rows, std::int64_t cols, std::size_t elem,
                      rs::device_limits d = h200) {
    return rs::plan_for(rs::direction::forward, rows, cols, elem, {int(16 / elem), false}, d);
  };
  // 50257 16-bit columns: 7 CTAs up to 37 rows (259), then three staged CTAs of 40 KB.
  EXPECT_EQ(fwd(37, 50257, 2).config, rs::detail::configs::cluster_128t);
  EXPECT_EQ(fwd(37, 50257, 2).cluster_size, 7);
  EXPECT_EQ(fwd(38, 50257, 2).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(38, 50257, 2).cluster_size, 3);
  // fp32 32000 columns: 8 CTAs up to 33 rows, then 4 of 256 threads.
  EXPECT_EQ(fwd(33, 32000, 4).cluster_size, 8);
  EXPECT_EQ(fwd(34, 32000, 4).cluster_size, 4);
  EXPECT_EQ(fwd(34, 32000, 4).threads_per_cta, 256);
  // Rows that 16 such CTAs do not hold, or fewer allowed: as planned otherwise.
  EXPECT_EQ(fwd(1, 16 * 8192 + 1, 2).algo, algorithm::staged);
  EXPECT_EQ(fwd(1, 65537, 4).threads_per_cta, 256);
  EXPECT_EQ(fwd(1, 65536, 4, hopper_portable).config, rs::detail::configs::cluster_256t);
  EXPECT_EQ(fwd(1, 65536, 4, hopper_portable).cluster_size, 8);
  EXPECT_EQ(fwd(1, 32000, 4, hopper_portable).config, rs::detail::configs::cluster_128t);
  EXPECT_EQ(fwd(1, 32000, 4, a100).cluster_size, 1);
  // Backward keeps the CTAs of 256 threads (where they leave no more slots idle).
  const auto b = rs::plan_for(rs::direction::backward, 1, 32000, 2, {8, false}, h200);
  EXPECT_EQ(b.config, rs::detail::configs::cluster_256t);
  EXPECT_EQ(b.cluster_size, 2);
}

TEST(Plan, SixteenBitBackwardStreamsRowsOfElevenAndTwelveClusterCtas) {
  const auto bwd = [](std::int64_t rows, std::int64_t cols, bool shifted = false,
                      std::size_t elem = 2) {
    return rs::plan_for(rs::direction::backward, rows, cols, elem, {int(16 / elem), shifted}, h200);
  };
  const std::int64_t cta = 16384;  // 16-bit elements a 256-thread CTA holds (128 bytes a thread)
  // Rows of 11 and 12 CTAs (counting the misaligned head's window) stream through half as many.
  for (std::int64_t cols : {10 * cta + 1, 12 * cta - 7, 12 * cta})
    for (bool shifted : {false, true}) {
      if (shifted && cols == 12 * cta) continue;  // 13 CTAs with the head's window
      const auto p = bwd(883, cols, shifted);
      SCOPED_TRACE("cols=" + std::to_string(cols) + " shifted=" + std::to_string(shifted) + " " +
                   rs::to_string(p));
      EXPECT_EQ(p.algo, algorithm::streaming);
      EXPECT_EQ(p.cluster_size, (rs::detail::ceil_div(cols + (shifted ? 7 : 0), cta) + 1) / 2);
      EXPECT_EQ(p.stash_tiles, 1);
      EXPECT_TRUE(rs::detail::reads_once(p, rs::direction::backward, 2));
      // A workspace changes nothing: the row is read once.
      const auto w = rs::plan_for(rs::direction::backward, 883, cols, 2, {8, shifted}, h200, true);
      EXPECT_EQ(w.algo, algorithm::streaming);
      EXPECT_EQ(w.cluster_size, p.cluster_size);
    }
  // Rows of 9, 10 and 13-16 CTAs, aligned or not, take clusters: the one-window boundaries of 9,
  // 11 and 13 CTAs, 151936 (10) and 15 CTAs of which the last holds one window.
  const std::pair<std::int64_t, bool> clustered[] = {{8 * cta + 1, true},
                                                     {9 * cta, false},
                                                     {9 * cta - 7, true},
                                                     {9 * cta + 1, false},
                                                     {151936, false},
                                                     {10 * cta, false},
                                                     {10 * cta - 7, true},
                                                     {12 * cta + 1, false},
                                                     {12 * cta - 6, true},
                                                     {15 * cta, false},
                                                     {14 * cta + 1, true},
                                                     {15 * cta + 1, false},
                                                     {std::int64_t{262144}, false}};
  for (auto [cols, shifted] : clustered) {
    const auto p = bwd(883, cols, shifted);
    SCOPED_TRACE("cols=" + std::to_string(cols) + " shifted=" + std::to_string(shifted) + " " +
                 rs::to_string(p));
    EXPECT_EQ(p.algo, algorithm::cluster);
    EXPECT_EQ(p.cluster_size, rs::detail::ceil_div(cols + (shifted ? 7 : 0), cta));
    EXPECT_EQ(p.threads_per_cta, 256);
  }
  // The rule counts CTAs of 256 threads: 11 narrow CTAs (128 threads) stay a cluster.
  EXPECT_EQ(bwd(883, 90000).algo, algorithm::cluster);
  EXPECT_EQ(bwd(883, 90000).cluster_size, 11);
  EXPECT_EQ(bwd(883, 90000).threads_per_cta, 128);
  // A few rows (no more CTAs than SMs) keep the cluster's CTAs; so do fp32 rows and forward.
  EXPECT_EQ(bwd(8, 11 * cta).algo, algorithm::cluster);
  EXPECT_EQ(bwd(8, 11 * cta).cluster_size, 11);
  EXPECT_EQ(bwd(883, 11 * 8192, false, 4).algo, algorithm::cluster);
  EXPECT_EQ(bwd(883, 11 * 8192, false, 4).cluster_size, 11);
  EXPECT_EQ(rs::plan_for(rs::direction::forward, 883, 151936, 4, {4, false}, h200).algo,
            algorithm::cluster);
}

TEST(Plan, SixteenBitForwardRowsBeyondOneCtaAreStaged) {
  const auto fwd = [](std::int64_t rows, std::int64_t cols, bool shifted = false,
                      rs::device_limits d = h200) {
    return rs::plan_for(rs::direction::forward, rows, cols, 2, {8, shifted}, d);
  };
  const std::int64_t cta = 16384;  // elements a staged CTA holds: 256 threads x 8 x 16 bytes
  // One 256-thread CTA holds up to 18K elements (144 bytes a thread), but not in launches of a few
  // rows (at most two 128-thread CTAs an SM: FewForwardRowsTakeTheMost128ThreadCtas).
  for (std::int64_t cols : {cta, cta + 1, 9 * cta / 8 - 7, 9 * cta / 8})
    for (bool shifted : {false, true}) {
      if (shifted && cols == 9 * cta / 8) continue;  // a head window more than 256 x 9
      EXPECT_EQ(fwd(89, cols, shifted).algo, algorithm::registers);
      EXPECT_EQ(fwd(89, cols, shifted).threads_per_cta, 256);
      const bool in_128_bytes = rs::detail::ceil_div(cols + (shifted ? 7 : 0), 8) <= 2048;
      EXPECT_EQ(fwd(88, cols, shifted).algo,
                in_128_bytes ? algorithm::registers : algorithm::cluster);
      EXPECT_EQ(fwd(88, cols, shifted).threads_per_cta, in_128_bytes ? 256 : 128);
    }
  // Launches of more than two 128-thread CTAs an SM (fewer rows: see the test above).
  for (std::int64_t rows : {89, 1046})
    for (bool shifted : {false, true})
      for (std::int64_t cols : {9 * cta / 8 + 1, 2 * cta - 7, 17 * cta / 8 + 1, std::int64_t{32000},
                                std::int64_t{52432}, std::int64_t{128256}, std::int64_t{151936},
                                15 * cta + 1, 16 * cta - 7}) {
        const auto p = fwd(rows, cols, shifted);
        SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " " +
                     rs::to_string(p));
        EXPECT_EQ(p.algo, algorithm::staged);
        EXPECT_EQ(p.config, rs::detail::configs::staged_32KB);
        // The fewest CTAs that hold the row (its windows, a head window where shifted).
        EXPECT_EQ(p.cluster_size, rs::detail::ceil_div(p.windows, 2048));
        EXPECT_EQ(p.vecs_per_thread, 8);
        EXPECT_EQ(p.grid_ctas, rows * p.cluster_size);
        EXPECT_EQ(rs::to_string(p).substr(0, 7), "staged ");
      }
  EXPECT_EQ(fwd(883, 151936).cluster_size, 10);
  EXPECT_EQ(fwd(1046, 65536).cluster_size, 4);
  // Rows of three 32 KB CTAs the third at most an eighth full (32769..34816 columns aligned,
  // 32762..34809 shifted: 4097..4352 windows) take two CTAs of 40 KB, rows of four at most four
  // fifths full (49153..52424, 49146..52417: 6145..6553 windows) three; the others the fewest
  // of 32 KB. In any launch beyond a few rows, on a device of clusters of 8 too.
  for (rs::device_limits d : {h200, hopper_portable})
    for (std::int64_t rows : {89, 1046})
      for (bool shifted : {false, true})
        for (std::int64_t cols = 2 * cta - 64; cols <= 4 * cta; ++cols) {
          const auto p = fwd(rows, cols, shifted, d);
          const std::int64_t windows = rs::detail::ceil_div(cols + (shifted ? 7 : 0), 8);
          SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " " +
                       rs::to_string(p));
          const bool forty =
              (windows > 2 * 2048 && windows <= 4352) || (windows > 3 * 2048 && windows <= 6553);
          ASSERT_EQ(p.algo, algorithm::staged);
          ASSERT_EQ(p.config,
                    forty ? rs::detail::configs::staged_40KB : rs::detail::configs::staged_32KB);
          ASSERT_EQ(p.cluster_size, rs::detail::ceil_div(windows, forty ? 2560 : 2048));
          ASSERT_EQ(p.vecs_per_thread, forty ? 10 : 8);
          ASSERT_EQ(p.grid_ctas, rows * p.cluster_size);
        }
  EXPECT_EQ(fwd(1046, 50257, true).cluster_size, 3);
  EXPECT_EQ(fwd(1046, 50257, true).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(1046, 52424).cluster_size, 3);
  EXPECT_EQ(fwd(1046, 52425).cluster_size, 4);
  EXPECT_EQ(fwd(1046, 49152).cluster_size, 3);
  EXPECT_EQ(fwd(1046, 49152).config, rs::detail::configs::staged_32KB);
  EXPECT_EQ(fwd(1046, 49153).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(1046, 32768).cluster_size, 2);
  EXPECT_EQ(fwd(1046, 32768).config, rs::detail::configs::staged_32KB);
  EXPECT_EQ(fwd(1046, 32769).cluster_size, 2);
  EXPECT_EQ(fwd(1046, 32769).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(1046, 34816).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(1046, 34817).cluster_size, 3);
  EXPECT_EQ(fwd(1046, 34817).config, rs::detail::configs::staged_32KB);
  // Rows a few (at most two 128-thread CTAs an SM): the narrow clusters.
  EXPECT_EQ(fwd(52, 32769).config, rs::detail::configs::cluster_128t);
  EXPECT_EQ(fwd(53, 32769).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(512, 16 * cta).cluster_size, 16);
  // Rows 16 such CTAs do not hold (a shifted row of 16 CTAs' elements needs one window more):
  // the fewest CTAs of 40, 48 or 64 KB (20K, 24K, 32K elements), the smallest that hold the row
  // in 16; beyond, streaming.
  for (std::int64_t rows : {1, 8, 64, 512})
    for (bool shifted : {false, true})
      for (std::int64_t cols : {16 * cta + 1, std::int64_t{300001}, 20 * cta, 20 * cta + 1,
                                24 * cta, 32 * cta - 7, 32 * cta}) {
        const auto p = fwd(rows, cols, shifted);
        SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " " +
                     rs::to_string(p));
        EXPECT_EQ(p.algo, shifted && cols == 32 * cta ? algorithm::streaming : algorithm::staged);
        if (p.algo != algorithm::staged) continue;
        const std::int64_t per_cta = p.windows <= 16 * 2560   ? 2560
                                     : p.windows <= 16 * 3072 ? 3072
                                                              : 4096;
        EXPECT_EQ(p.config, per_cta == 2560   ? rs::detail::configs::staged_40KB
                            : per_cta == 3072 ? rs::detail::configs::staged_48KB
                                              : rs::detail::configs::staged_64KB);
        EXPECT_EQ(p.cluster_size, rs::detail::ceil_div(p.windows, per_cta));
        EXPECT_EQ(p.vecs_per_thread, per_cta / 256);
        EXPECT_EQ(p.grid_ctas, rows * p.cluster_size);
      }
  EXPECT_EQ(fwd(512, 16 * cta, true).cluster_size, 13);
  EXPECT_EQ(fwd(512, 16 * cta, true).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(341, 24 * cta).cluster_size, 16);
  EXPECT_EQ(fwd(341, 24 * cta).config, rs::detail::configs::staged_48KB);
  EXPECT_EQ(fwd(341, 24 * cta, true).cluster_size, 13);
  EXPECT_EQ(fwd(341, 24 * cta, true).config, rs::detail::configs::staged_64KB);
  EXPECT_EQ(fwd(256, 32 * cta + 1).algo, algorithm::streaming);
  // Clusters of at most 8 (size 16 refused): 32 KB CTAs up to 8, then 40, 48 and 64 KB ones up
  // to 8, then streaming.
  EXPECT_EQ(fwd(1046, 8 * cta, false, hopper_portable).config, rs::detail::configs::staged_32KB);
  EXPECT_EQ(fwd(1046, 8 * cta, false, hopper_portable).cluster_size, 8);
  EXPECT_EQ(fwd(1046, 8 * cta + 1, false, hopper_portable).config,
            rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(1046, 8 * cta + 1, false, hopper_portable).cluster_size, 7);
  EXPECT_EQ(fwd(1046, 12 * cta, false, hopper_portable).config, rs::detail::configs::staged_48KB);
  EXPECT_EQ(fwd(1046, 12 * cta + 1, false, hopper_portable).config,
            rs::detail::configs::staged_64KB);
  EXPECT_EQ(fwd(1046, 16 * cta + 1, false, hopper_portable).algo, algorithm::streaming);
  // No clusters (sm_80): never staged. Backward: never staged (fp32 forward: the next test).
  EXPECT_EQ(fwd(1046, 9 * cta / 8 + 1, false, a100).algo, algorithm::registers);
  EXPECT_EQ(fwd(1046, 9 * cta / 8 + 1, false, a100).threads_per_cta, 512);
  for (std::int64_t cols = 1; cols <= (std::int64_t{1} << 20); cols += 997)
    for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
      EXPECT_NE(
          rs::plan_for(rs::direction::backward, 64, cols, elem, {int(16 / elem), false}, h200).algo,
          algorithm::staged);
  // The staged configurations have kernels forward only, and but for CTAs of 32 KB 16-bit only.
  for (int c : {rs::detail::configs::staged_32KB, rs::detail::configs::staged_40KB,
                rs::detail::configs::staged_48KB, rs::detail::configs::staged_64KB,
                rs::detail::configs::staged_split})
    for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
      const int vec = static_cast<int>(16 / elem);
      EXPECT_EQ(rs::detail::has_kernel(c, rs::direction::forward, vec, elem),
                elem == 2 || c == rs::detail::configs::staged_32KB);
      EXPECT_FALSE(rs::detail::has_kernel(c, rs::direction::backward, vec, elem));
      EXPECT_FALSE(rs::detail::has_kernel(c, rs::direction::forward, 1, elem));
    }
}

// 16-bit forward rows that the widest one-CTA configuration takes (256 threads of 144 bytes:
// 2049-2304 windows) take one staged CTA of 40 KB instead in launches of more than 24 rows an SM;
// every other row, and every row of fewer rows, of fp32, backward, or without clusters, keeps
// its plan.
TEST(Plan, SixteenBitForwardRowsOfTheWidestCtaStagedInFullLaunches) {
  const auto fwd = [](std::int64_t rows, std::int64_t cols, bool shifted = false,
                      rs::device_limits d = h200) {
    return rs::plan_for(rs::direction::forward, rows, cols, 2, {8, shifted}, d);
  };
  const std::int64_t most = 24 * 132;  // rows of the launches that keep the registers
  for (bool shifted : {false, true})
    for (std::int64_t cols = 16384 - 8; cols <= 18432 + 8; ++cols) {
      const std::int64_t windows = rs::detail::ceil_div(cols + (shifted ? 7 : 0), 8);
      const auto p = fwd(most + 1, cols, shifted), q = fwd(most, cols, shifted);
      SCOPED_TRACE("cols=" + std::to_string(cols) + " " + rs::to_string(p));
      ASSERT_EQ(q.config, windows <= 2048   ? rs::detail::configs::one_cta_of(256, 128)
                          : windows <= 2304 ? rs::detail::configs::widest_one_cta
                                            : rs::detail::configs::staged_32KB);
      if (windows <= 2048 || windows > 2304) {
        ASSERT_EQ(rs::to_string(p), rs::to_string(q));
        continue;
      }
      ASSERT_EQ(p.algo, algorithm::staged);
      ASSERT_EQ(p.config, rs::detail::configs::staged_40KB);
      ASSERT_EQ(p.cluster_size, 1);
      ASSERT_EQ(p.grid_ctas, most + 1);
      ASSERT_EQ(p.windows, windows);
      ASSERT_EQ(rs::to_string(p),
                std::string("staged cta=256 tpr=256 vec=8x10") + (shifted ? " head" : ""));
      ASSERT_EQ(plan_error(p, most + 1, cols, {2, {8, shifted}}, h200), nullptr);
    }
  // The launch counted in rows an SM of the device; clusters of at most 8 stage the row alike.
  EXPECT_EQ(fwd(12 * 132 + 1, 16385, false, {66, 90, 16}).config, rs::detail::configs::staged_40KB);
  EXPECT_EQ(fwd(12 * 132, 16385, false, {66, 90, 16}).config, rs::detail::configs::widest_one_cta);
  EXPECT_EQ(fwd(8192, 16385, false, hopper_portable).config, rs::detail::configs::staged_40KB);
  // No clusters (sm_80), fp32 (8193-9216 columns), backward: registers; the scalar fallback
  // streams such rows.
  EXPECT_EQ(fwd(8192, 16385, false, a100).config, rs::detail::configs::widest_one_cta);
  EXPECT_EQ(rs::plan_for(rs::direction::forward, 8192, 16385, 2, {1, false}, h200).algo,
            algorithm::streaming);
  EXPECT_EQ(rs::plan_for(rs::direction::forward, 16382, 8193, 4, {4, false}, h200).config,
            rs::detail::configs::widest_one_cta);
  EXPECT_EQ(rs::plan_for(rs::direction::backward, 8192, 16385, 2, {8, false}, h200).algo,
            algorithm::registers);
}

// fp32 forward rows of 5 to 16 staged CTAs of 32 KB (8K elements), or of 4 more than 7/8 full,
// in launches of more than 3 and at most 60 such CTAs an SM are staged; every other fp32
// forward row keeps the plan it had (register clusters, or what the rules before it choose: one
// CTA, a few rows' 128-thread CTAs).
TEST(Plan, Fp32ForwardStagedInMidLaunches) {
  const std::int64_t cta = 8192;  // fp32 elements a staged CTA holds: 256 threads x 8 x 16 bytes
  const std::int64_t cta_windows = cta / 4;
  for (auto const& d : {h200, hopper_portable, a100})
    for (bool shifted : {false, true})
      for (std::int64_t cols = cta + 1; cols <= 17 * cta + 5; cols += 509)
        for (std::int64_t rows :
             {1, 8, 24, 25, 49, 50, 64, 100, 133, 495, 496, 792, 793, 1584, 1585, 2670}) {
          const auto p = rs::plan_for(rs::direction::forward, rows, cols, 4, {4, shifted}, d);
          const std::int64_t windows = rs::detail::ceil_div(cols + (shifted ? 3 : 0), 4);
          const std::int64_t n = rs::detail::ceil_div(windows, cta_windows), launch = rows * n;
          const bool full = n >= 5 || (n == 4 && 8 * windows > 7 * n * cta_windows);
          const bool staged = d.compute_capability >= 90 && full && n <= d.max_cluster_size &&
                              launch > 3 * d.sm_count && launch <= 60 * d.sm_count;
          SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                       " shifted=" + std::to_string(shifted) + " max_cluster=" +
                       std::to_string(d.max_cluster_size) + " " + rs::to_string(p));
          ASSERT_EQ(p.algo == algorithm::staged, staged);
          if (!staged) continue;
          ASSERT_EQ(p.config, rs::detail::configs::staged_32KB);
          ASSERT_EQ(p.cluster_size, n);
          ASSERT_EQ(p.vecs_per_thread, 8);
          ASSERT_EQ(p.grid_ctas, launch);
          ASSERT_EQ(plan_error(p, rows, cols, {4, {4, shifted}}, d), nullptr);
          // Backward keeps its plans.
          ASSERT_NE(rs::plan_for(rs::direction::backward, rows, cols, 4, {4, shifted}, d).algo,
                    algorithm::staged);
        }
  const auto fwd = [](std::int64_t rows, std::int64_t cols, bool shifted = false) {
    return rs::plan_for(rs::direction::forward, rows, cols, 4, {4, shifted}, h200);
  };
  // The edges. Cols: four CTAs 7/8 full (28672 aligned) stay register clusters, fuller ones are
  // staged (28673; 28672 shifted, a head window more), and so are five (32769); 16 CTAs are
  // staged (131072), 17 not.
  EXPECT_EQ(fwd(200, 3 * cta + 1).algo, algorithm::cluster);
  EXPECT_EQ(fwd(200, 7 * cta / 2).algo, algorithm::cluster);
  EXPECT_EQ(fwd(200, 7 * cta / 2 + 1).algo, algorithm::staged);
  EXPECT_EQ(fwd(200, 7 * cta / 2 + 1).cluster_size, 4);
  EXPECT_EQ(fwd(200, 7 * cta / 2, true).algo, algorithm::staged);
  EXPECT_EQ(fwd(200, 4 * cta).algo, algorithm::staged);
  EXPECT_EQ(fwd(200, 4 * cta).cluster_size, 4);
  EXPECT_EQ(fwd(200, 4 * cta + 1).cluster_size, 5);
  EXPECT_EQ(fwd(200, 4 * cta + 1).algo, algorithm::staged);
  EXPECT_EQ(fwd(200, 16 * cta).algo, algorithm::staged);
  EXPECT_EQ(fwd(200, 16 * cta).cluster_size, 16);
  EXPECT_EQ(fwd(200, 16 * cta + 1).algo, algorithm::cluster);
  // Rows: 128256 columns (16 CTAs) from 25 rows (400 CTAs) to 495 (7920); 50257 (7) from 57 to
  // 1131.
  EXPECT_EQ(fwd(24, 128256).algo, algorithm::cluster);
  EXPECT_EQ(fwd(25, 128256).algo, algorithm::staged);
  EXPECT_EQ(fwd(64, 128256).algo, algorithm::staged);
  EXPECT_EQ(fwd(495, 128256).algo, algorithm::staged);
  EXPECT_EQ(fwd(496, 128256).algo, algorithm::cluster);
  EXPECT_EQ(fwd(56, 50257).config, rs::detail::configs::cluster_128t);
  EXPECT_EQ(fwd(57, 50257).algo, algorithm::staged);
  EXPECT_EQ(fwd(57, 50257).cluster_size, 7);
  EXPECT_EQ(fwd(1131, 50257).algo, algorithm::staged);
  EXPECT_EQ(fwd(1132, 50257).config, rs::detail::configs::cluster_256t_256B);
  // A few rows (at most two 128-thread CTAs an SM) keep the most 128-thread CTAs.
  EXPECT_EQ(fwd(8, 40000).config, rs::detail::configs::cluster_128t);
}

TEST(Plan, ToStringNamesTheTier) {
  const auto p = rs::plan_for(rs::direction::forward, 1, 128256, 4, {4, false}, h200);
  EXPECT_EQ(rs::to_string(p), "cluster x16 cta=256 tpr=256 vec=4x8");
  const auto q = rs::plan_for(rs::direction::backward, 883, 180000, 2, {8, true}, h200);
  EXPECT_EQ(rs::to_string(q), "streaming x6 cta=256 tpr=256 vec=8x8 head stash=1");
  const auto r = rs::plan_for(rs::direction::forward, 883, 151936, 2, {8, true}, h200);
  EXPECT_EQ(rs::to_string(r), "staged x10 cta=256 tpr=256 vec=8x8 head");
}

// Half tiles in the stash (plan::stash_halves) belong to streaming and split plans (backward:
// the dispatcher refuses them forward): a plan of any other tier that names some, or a negative
// count, does not hold (the launchers' `run` refuses it). On the H200 backward rows of 2^24
// 16-bit columns take one split given a workspace (hinted), none streamed without (in place),
// where they may be forced.
TEST(Plan, HalfTilesOnlyInStreamingAndSplitPlans) {
  const std::int64_t cols = std::int64_t{1} << 24;
  const auto split = rs::plan_for(rs::direction::backward, 8, cols, 2, {8, false}, h200, true);
  const auto streaming = rs::plan_for(rs::direction::backward, 8, cols, 2, {8, false}, h200);
  ASSERT_EQ(split.config, rs::detail::configs::split_hinted);
  ASSERT_EQ(streaming.algo, algorithm::streaming);
  EXPECT_EQ(split.stash_halves, 1);
  EXPECT_EQ(streaming.stash_halves, 0);
  for (rs::plan q : {split, streaming}) {
    SCOPED_TRACE(rs::to_string(q));
    q.stash_halves = 1;
    EXPECT_TRUE(rs::detail::plan_holds(q));
    q.stash_halves = -1;
    EXPECT_FALSE(rs::detail::plan_holds(q));
  }
  const auto staged_split =
      rs::plan_for(rs::direction::forward, 128, std::int64_t{1} << 20, 2, {8, false}, h200, true);
  const auto cluster = rs::plan_for(rs::direction::backward, 8, 100000, 2, {8, false}, h200);
  ASSERT_EQ(staged_split.algo, algorithm::staged_split);
  ASSERT_EQ(cluster.algo, algorithm::cluster);
  for (rs::plan q : {staged_split, cluster}) {
    SCOPED_TRACE(rs::to_string(q));
    EXPECT_EQ(q.stash_halves, 0);
    EXPECT_TRUE(rs::detail::plan_holds(q));
    q.stash_halves = 1;
    EXPECT_FALSE(rs::detail::plan_holds(q));
  }
}

// On devices of any size and shared memory (random, with and without clusters), and on those the
// dispatcher plans for again where a plan does not fit (no shared memory for a stash, smaller
// clusters: choose_plan), every plan holds its rows, its configuration has a kernel for its
// direction, width and type (has_kernel), and a streaming or split plan's stash (whole tiles,
// then half tiles) fits the shared memory of the CTAs an SM runs and of one CTA (none without
// shared memory for it); half tiles only in hinted backward split plans.
TEST(Plan, EveryPlanOfAnyDeviceHoldsItsRowsAndStashAndHasAKernel) {
  std::mt19937_64 g(20261204);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  // Log-uniform over 1..2^(bits / 1000).
  auto log_pick = [&](std::int64_t bits) {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::exp2(static_cast<double>(pick(0, bits)) / 1000)));
  };
  int halves = 0;
  for (int i = 0; i < 400000; ++i) {
    rs::device_limits d;
    d.sm_count = static_cast<int>(pick(1, 200));
    d.compute_capability = pick(0, 1) ? 90 : 80;
    d.max_cluster_size = static_cast<int>(pick(1, 16));
    const bool no_stash = pick(0, 4) == 0;
    d.shared_bytes_per_sm = no_stash ? 0 : static_cast<int>(pick(48, 232) * 1024);
    d.shared_bytes_per_cta = no_stash ? 0
                                      : static_cast<int>(std::min<std::int64_t>(
                                            d.shared_bytes_per_sm - 1024, pick(48, 227) * 1024));
    if (pick(0, 1))
      for (int& n : d.clusters_at_two_an_sm) n = 0;
    const std::size_t elem = pick(0, 2) == 0 ? 4 : 2;
    const int vec = pick(0, 3) == 0 ? 1 : static_cast<int>(16 / elem);
    const rs::row_layout layout{vec, vec > 1 && pick(0, 1) == 1, pick(0, 1) == 1, pick(0, 1) == 1};
    const std::int64_t cols =
        pick(0, 3) == 0 ? log_pick(25000) : pick(1 << 17, std::int64_t{1} << 25);
    const std::int64_t rows = pick(0, 2) == 0   ? pick(1, 16)
                              : pick(0, 1) == 0 ? pick(1, 2000)
                                                : log_pick(17000);
    const auto dir = pick(0, 1) ? rs::direction::forward : rs::direction::backward;
    const rs::plan p = rs::plan_for(dir, rows, cols, elem, layout, d, pick(0, 1) == 1);
    SCOPED_TRACE("sms=" + std::to_string(d.sm_count) +
                 " smem=" + std::to_string(d.shared_bytes_per_sm) + "/" +
                 std::to_string(d.shared_bytes_per_cta) + " elem=" + std::to_string(elem) +
                 " vec=" + std::to_string(vec) + " rows=" + std::to_string(rows) +
                 " cols=" + std::to_string(cols) + " " + rs::to_string(p));
    ASSERT_TRUE(rs::detail::plan_holds(p));
    ASSERT_TRUE(rs::detail::has_kernel(p.config, dir, vec, elem));
    auto const& k = kernel_configs[p.config];
    const int tensors = rs::detail::tensors_of(dir);
    ASSERT_GE(p.stash_tiles, 0);
    ASSERT_GE(p.stash_halves, 0);
    if (p.stash_halves > 0) {
      ++halves;
      ASSERT_EQ(dir, rs::direction::backward);
      ASSERT_EQ(p.config, rs::detail::configs::split_hinted);
    }
    if (p.algo != algorithm::split && p.algo != algorithm::streaming) continue;
    if (no_stash) {
      ASSERT_EQ(p.stash_tiles, 0);
      ASSERT_EQ(p.stash_halves, 0);
      continue;
    }
    const std::int64_t per_cta = p.stash_tiles * rs::detail::stash_tile_bytes(k, tensors) +
                                 p.stash_halves * std::int64_t{k.bytes} * k.threads_per_cta +
                                 rs::detail::cta_smem_reserve;
    ASSERT_LE(per_cta, d.shared_bytes_per_cta);
    ASSERT_LE(per_cta * rs::detail::ctas_per_sm(k, tensors, elem), d.shared_bytes_per_sm);
  }
  EXPECT_GT(halves, 1000);
}

// The kernels the launchers compile (has_kernel): for each direction and type, vectorised, every
// configuration but those plan_for never chooses for them (found by enumerating its plans over
// many shapes, layouts and devices); the scalar fallback, those that allow it.
TEST(Plan, KernelsOfEachDirectionAndType) {
  namespace configs = rs::detail::configs;
  using configs::one_cta_of;
  // One-CTA configurations without an fp32 kernel.
  std::set<int> fp32_one_cta = {one_cta_of(1, 128), one_cta_of(2, 128)};
  for (int threads : {4, 8, 16})
    for (int bytes : {80, 96, 112, 144}) fp32_one_cta.insert(one_cta_of(threads, bytes));
  for (int threads : {32, 64, 128, 256})
    for (int bytes : {96, 112}) fp32_one_cta.insert(one_cta_of(threads, bytes));
  auto with = [](std::set<int> a, std::initializer_list<int> b) {
    a.insert(b.begin(), b.end());
    return a;
  };
  const int tiled8 = configs::last_tiled, tiled4 = tiled8 - 1, tiled2 = tiled8 - 2,
            tiled1 = configs::first_tiled;
  struct case_k {
    rs::direction dir;
    std::size_t elem;
    std::set<int> none;  // configurations without a kernel
  };
  const auto fwd = rs::direction::forward, bwd = rs::direction::backward;
  const case_k cases[] = {
      {fwd,
       2,
       {configs::cluster_256t, configs::cluster_256t_256B, configs::cluster_256t_144B,
        configs::cluster_256t_288B}},
      {bwd,
       2,
       {one_cta_of(4, 144), one_cta_of(8, 144), one_cta_of(16, 144), one_cta_of(32, 144),
        configs::cluster_256t_256B, configs::staged_32KB, configs::staged_64KB,
        configs::staged_split, tiled8, configs::cluster_256t_288B, configs::staged_40KB,
        configs::staged_48KB}},
      {fwd, 4,
       with(fp32_one_cta, {configs::staged_64KB, configs::staged_split, configs::cluster_256t_144B,
                           configs::staged_40KB, configs::staged_48KB, configs::split_hinted})},
      {bwd, 4,
       with(fp32_one_cta,
            {configs::cluster_256t_256B, configs::staged_32KB, configs::staged_64KB,
             configs::staged_split, tiled1, tiled2, tiled4, tiled8, configs::cluster_256t_288B,
             configs::staged_40KB, configs::staged_48KB})},
  };
  for (auto const& k : cases)
    for (int c = 0; c < rs::detail::num_kernel_configs; ++c) {
      SCOPED_TRACE("config " + std::to_string(c) + " elem " + std::to_string(k.elem) +
                   (k.dir == fwd ? " forward" : " backward"));
      EXPECT_EQ(rs::detail::has_kernel(c, k.dir, static_cast<int>(16 / k.elem), k.elem),
                k.none.count(c) == 0);
      EXPECT_EQ(rs::detail::has_kernel(c, k.dir, 1, k.elem), kernel_configs[c].scalar_ok);
    }
  EXPECT_FALSE(rs::detail::has_kernel(-1, fwd, 4, 4));
  EXPECT_FALSE(rs::detail::has_kernel(rs::detail::num_kernel_configs, fwd, 4, 4));
}

// A staged split plan on the H200: groups of CTAs of 32 KB (6 an SM, all resident) that hold a
// row in shared memory, in the fewest rounds of rows, the CTAs shared out evenly, at most twice
// the CTAs a row needs; at least four rows fit the device; 16-bit rows only.
void expect_staged_split(rs::plan const& p, std::int64_t rows, std::int64_t cols,
                         std::size_t elem) {
  ASSERT_EQ(p.algo, algorithm::staged_split);
  EXPECT_EQ(elem, 2u);
  EXPECT_EQ(p.config, rs::detail::configs::staged_split);
  EXPECT_TRUE(rs::detail::plan_holds(p));
  const std::int64_t resident = 132 * 6;
  const std::int64_t per_cta = 32768 / static_cast<std::int64_t>(elem);
  const std::int64_t need = (cols + per_cta - 1) / per_cta;
  EXPECT_GE(need, 2);
  EXPECT_GE(p.split_ctas, need);
  EXPECT_GE(p.row_groups, 1);
  EXPECT_LE(p.row_groups, rows);
  EXPECT_LE(4 * need, resident);
  EXPECT_EQ(p.split_ctas, std::min(resident / p.row_groups, 2 * need));
  EXPECT_EQ(p.grid_ctas, std::int64_t{p.row_groups} * p.split_ctas);
  EXPECT_LE(p.grid_ctas, resident);
  const std::int64_t most = std::min(rows, resident / need);
  EXPECT_EQ((rows + p.row_groups - 1) / p.row_groups, (rows + most - 1) / most);
  EXPECT_EQ(p.stash_tiles, 0);
  EXPECT_EQ(p.workspace_bytes, rs::detail::split_workspace_bytes(p.row_groups, p.split_ctas));
}

// The staged split follows the device: its SMs and their shared memory set the CTAs it runs at
// once (32 KB of row a CTA plus 2 KB), of which a row may take a quarter; at most twice the CTAs a
// row needs; 16-bit rows, 16-byte vectors and sm_90 only (fp32 rows split).
TEST(Plan, StagedSplitFollowsTheDevice) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    const int vec = static_cast<int>(16 / elem);
    const std::int64_t per_cta = 32768 / static_cast<std::int64_t>(elem);  // elements a CTA holds
    for (int sms : {132, 66, 20})
      for (int smem : {233472, 101376, 69632}) {
        rs::device_limits d{sms, 90, 16, smem, 232448};
        const std::int64_t resident =
            std::int64_t{sms} * std::min(6, smem / (32768 + rs::detail::cta_smem_reserve));
        SCOPED_TRACE(std::to_string(elem) + " bytes, " + std::to_string(sms) + " SMs, " +
                     std::to_string(smem) + " bytes an SM");
        for (std::int64_t need : {std::int64_t{65}, resident / 4, resident / 4 + 1})
          for (std::int64_t rows : {1, 5, 1000}) {
            const std::int64_t cols = (need - 1) * per_cta + 7;  // needs `need` CTAs
            const auto p =
                rs::plan_for(rs::direction::forward, rows, cols, elem, {vec, false}, d, true);
            SCOPED_TRACE("need " + std::to_string(need) + ", rows " + std::to_string(rows) + ": " +
                         rs::to_string(p));
            if (cols <= (std::int64_t{1} << 20) / static_cast<std::int64_t>(elem)) {
              EXPECT_NE(p.algo, algorithm::staged_split);  // the clusters hold it
              continue;
            }
            if (4 * need > resident || elem == 4) {
              EXPECT_NE(p.algo, algorithm::staged_split);
              continue;
            }
            ASSERT_EQ(p.algo, algorithm::staged_split);
            EXPECT_GE(p.split_ctas, need);
            EXPECT_LE(p.split_ctas, 2 * need);
            // Each CTA's share of the widest row (passed to the kernel) within its 32 KB.
            EXPECT_LE(rs::detail::share_windows(p), 2048);
            EXPECT_GE(std::int64_t{rs::detail::share_windows(p)} * p.split_ctas, p.windows);
            EXPECT_LE(p.grid_ctas, resident);
            EXPECT_LE(p.row_groups, rows);
            const std::int64_t most = std::min(rows, resident / need);
            EXPECT_EQ((rows + p.row_groups - 1) / p.row_groups, (rows + most - 1) / most);
          }
      }
    // Neither without 16-byte vectors nor before sm_90, nor without a workspace.
    const std::int64_t cols = 100 * per_cta;
    EXPECT_NE(rs::plan_for(rs::direction::forward, 8, cols, elem, {1, false}, h200, true).algo,
              algorithm::staged_split);
    EXPECT_NE(rs::plan_for(rs::direction::forward, 8, cols, elem, {vec, false}, a100, true).algo,
              algorithm::staged_split);
    EXPECT_NE(rs::plan_for(rs::direction::forward, 8, cols, elem, {vec, false}, h200).algo,
              algorithm::staged_split);
    EXPECT_EQ(
        rs::plan_for(rs::direction::forward, 8, cols, elem, {vec, false}, hopper_portable, true)
            .algo,
        elem == 2 ? algorithm::staged_split : algorithm::split);
  }
}

TEST(Plan, SplitTierOnlyWithAWorkspaceAndOnlyBeyondTheRegisterTiers) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (auto dir : {rs::direction::forward, rs::direction::backward}) {
      SCOPED_TRACE(std::to_string(elem) + (dir == rs::direction::forward ? " fwd" : " bwd"));
      const int vec = static_cast<int>(16 / elem);
      const bool fwd = dir == rs::direction::forward;
      // The longest rows without a workspace read once: backward streaming through 16 CTAs of
      // 2 tiles, 1 MB; fp32 forward 16 cluster CTAs of 288 bytes a thread, 1.125 MB; 16-bit
      // forward 16 staged CTAs of 64 KB, 1 MB.
      const std::int64_t longest =
          (fwd && elem == 4 ? 9 * (std::int64_t{1} << 17) : std::int64_t{1} << 20) /
          static_cast<std::int64_t>(elem);
      // Rows held on chip without a workspace (register tiers, streaming read once): the same
      // plan with or without a workspace, and no workspace needed.
      for (std::int64_t cols : {std::int64_t{1000}, std::int64_t{50257}, longest}) {
        const auto a = rs::plan_for(dir, 9, cols, elem, {vec, false}, h200);
        const auto b = rs::plan_for(dir, 9, cols, elem, {vec, false}, h200, true);
        EXPECT_EQ(a.config, b.config);
        EXPECT_EQ(a.cluster_size, b.cluster_size);
        EXPECT_EQ(b.workspace_bytes, 0);
      }
      const int tensors = rs::detail::tensors_of(dir);
      const std::int64_t resident =
          std::int64_t{h200.sm_count} *
          rs::detail::ctas_per_sm(kernel_configs[rs::detail::configs::split], tensors, elem);
      for (std::int64_t cols = longest + 1; cols <= (std::int64_t{1} << 25); cols = cols * 3 / 2)
        for (std::int64_t rows : {1, 2, 7, 128, 100000}) {
          const auto p = rs::plan_for(dir, rows, cols, elem, {vec, false}, h200, true);
          SCOPED_TRACE("cols=" + std::to_string(cols) + " rows=" + std::to_string(rows) + " " +
                       rs::to_string(p));
          const auto s = rs::plan_for(dir, rows, cols, elem, {vec, false}, h200);
          EXPECT_EQ(s.algo, algorithm::streaming);
          if (fwd) {
            // 16-bit: staged split where the CTAs of the device hold four rows in shared memory
            // (32 KB each, 6 an SM), else split; fp32: split.
            if (p.algo == algorithm::staged_split) {
              expect_staged_split(p, rows, cols, elem);
              continue;
            }
            if (elem == 2) {
              EXPECT_GT(cols, 198 * 32768 / static_cast<std::int64_t>(elem));
            }
          }
          // Streaming that reads the row once, or little of it twice (one tile, or forward up to
          // 3/8 of them in full launches: fp32 from 262145 columns, 33 tiles over 16 CTAs of 2
          // held; RowsStreamedMostlyOnChip...), takes no workspace.
          const std::int64_t twice = rs::detail::streamed_twice_tiles(s, dir, elem);
          EXPECT_EQ(twice == 0, rs::detail::reads_once(s, dir, elem));
          if (twice == 0 || rs::detail::streams_partly_twice(s, dir, rows, elem, h200)) {
            EXPECT_EQ(p.config, s.config);
            EXPECT_EQ(p.cluster_size, s.cluster_size);
            EXPECT_EQ(p.workspace_bytes, 0);
            EXPECT_LT(cols, std::int64_t{1} << 20);
            continue;
          }
          ASSERT_EQ(p.algo, algorithm::split);
          EXPECT_TRUE(rs::detail::plan_holds(p));
          EXPECT_GE(p.row_groups, 1);
          EXPECT_LE(p.row_groups, rows);
          EXPECT_GE(p.split_ctas, 2);
          EXPECT_LE(p.grid_ctas, resident);  // all resident at once
          EXPECT_EQ(p.grid_ctas, std::int64_t{p.row_groups} * p.split_ctas);
          // No CTA without a tile.
          const std::int64_t tiles =
              (p.windows + 256 * p.vecs_per_thread - 1) / (256 * std::int64_t{p.vecs_per_thread});
          EXPECT_LE(p.split_ctas, tiles);
          // The stash: no tile kept that a CTA does not have (the last stays in registers),
          // and the stashes of the CTAs an SM runs fit its shared memory.
          const std::int64_t share = (tiles + p.split_ctas - 1) / p.split_ctas;
          EXPECT_GE(p.stash_tiles, 0);
          const int in_registers =
              rs::detail::keeps_last_tile(kernel_configs[p.config], tensors, elem) ? 1 : 0;
          EXPECT_EQ(in_registers, 1);  // every split CTA keeps its last tile in registers
          EXPECT_LE(p.stash_tiles, share - in_registers);
          auto const& k = kernel_configs[rs::detail::configs::split];
          const std::int64_t tile_bytes = rs::detail::stash_tile_bytes(k, tensors);
          const std::int64_t half_bytes = std::int64_t{k.bytes} * k.threads_per_cta;  // dy's
          const std::int64_t per_cta = p.stash_tiles * tile_bytes + p.stash_halves * half_bytes +
                                       rs::detail::cta_smem_reserve;
          EXPECT_LE(per_cta * (resident / h200.sm_count), h200.shared_bytes_per_sm);
          EXPECT_LE(per_cta, h200.shared_bytes_per_cta);
          // Half tiles (dy kept, y read again): hinted backward plans only, once the whole
          // tiles a CTA's shared memory holds are taken, as many as the rest of it holds (one on
          // the H200, two CTAs an SM: 112 KB a CTA, 68 KB a tile, 32 KB a half), and none that a
          // CTA does not have.
          if (fwd || p.config != rs::detail::configs::split_hinted) {
            EXPECT_EQ(p.stash_halves, 0);
          } else {
            const std::int64_t budget = h200.shared_bytes_per_sm / (resident / h200.sm_count) -
                                        rs::detail::cta_smem_reserve;
            const std::int64_t whole = budget / tile_bytes;
            const std::int64_t halves = (budget - whole * tile_bytes) / half_bytes;
            EXPECT_EQ(halves, 1);
            const std::int64_t over = std::max<std::int64_t>(share - in_registers - whole, 0);
            EXPECT_EQ(p.stash_halves, std::min(halves, over));
            if (p.stash_halves > 0) {
              EXPECT_EQ(p.stash_tiles, whole);
            }
          }
          EXPECT_EQ(p.workspace_bytes,
                    rs::detail::split_workspace_bytes(p.row_groups, p.split_ctas));
          // Forward (second reads hinted to stay in L2): more than one row at a time only where
          // its CTAs read at most 2.5 tiles twice on average (fp32; 16-bit: 4).
          if (fwd && p.row_groups > 1) {
            const std::int64_t held = p.stash_tiles + in_registers;
            const std::int64_t q = tiles / p.split_ctas, r = tiles % p.split_ctas;
            const std::int64_t again = r * std::max<std::int64_t>(q + 1 - held, 0) +
                                       (p.split_ctas - r) * std::max<std::int64_t>(q - held, 0);
            EXPECT_LE(2 * again, (elem == 4 ? 5 : 8) * std::int64_t{p.split_ctas});
          }
        }
      // Rows the CTAs of the device hold on chip are read once: a CTA's share within its
      // stash and registers (2^20 backward).
      if (!fwd) {
        const std::int64_t cols = std::int64_t{1} << 20;
        const auto p =
            rs::plan_for(dir, (std::int64_t{1} << 27) / cols, cols, elem, {vec, false}, h200, true);
        SCOPED_TRACE(rs::to_string(p));
        ASSERT_EQ(p.algo, algorithm::split);
        const std::int64_t tiles =
            (p.windows + 256 * p.vecs_per_thread - 1) / (256 * std::int64_t{p.vecs_per_thread});
        EXPECT_LE((tiles + p.split_ctas - 1) / p.split_ctas,
                  p.stash_tiles + (rs::detail::keeps_last_tile(kernel_configs[p.config],
                                                               rs::detail::tensors_of(dir), elem)
                                       ? 1
                                       : 0));
      }
      if (fwd) {  // 2^20 columns, rows*cols = 2^27: 12 rows at a time
        EXPECT_EQ(rs::to_string(rs::plan_for(dir, 128, 1 << 20, elem, {vec, true}, h200, true)),
                  elem == 2 ? "staged split 12x66 ctas cta=256 tpr=256 vec=8x8 head"
                            : "split 12x33 ctas cta=256 tpr=256 vec=4x8 head stash=2");
      }
      // fp32 forward, rows*cols = 2^27: groups whose CTAs read up to one tile (2^21, 2^22) or
      // 2.2 tiles (2^23, 2^24) twice from L2, rather than fewer groups reading once (2^21: 4x99,
      // 2^22: 2x198, 2^23: 1x396; docs/tuning.md).
      if (fwd && elem == 4) {
        const char* expected[] = {"split 6x66 ctas cta=256 tpr=256 vec=4x8 stash=2",
                                  "split 3x132 ctas cta=256 tpr=256 vec=4x8 stash=2",
                                  "split 2x198 ctas cta=256 tpr=256 vec=4x8 stash=2",
                                  "split 1x396 ctas cta=256 tpr=256 vec=4x8 stash=2"};
        for (int lg = 21; lg <= 24; ++lg)
          EXPECT_EQ(
              rs::to_string(rs::plan_for(dir, std::int64_t{1} << (27 - lg), std::int64_t{1} << lg,
                                         elem, {vec, false}, h200, true)),
              expected[lg - 21]);
      }
      // The scalar fallback splits too; devices without clusters as well (no bulk copies: no
      // staged split).
      EXPECT_EQ(rs::plan_for(dir, 3, 1 << 20, elem, {1, false}, h200, true).algo, algorithm::split);
      EXPECT_EQ(rs::plan_for(dir, 3, 1 << 20, elem, {vec, false}, a100, true).algo,
                algorithm::split);
      // Beyond the staged split, 16-bit forward splits as well, at two CTAs an SM that each
      // keep up to four tiles on chip (one in registers, three stashed): 2^22 columns (256
      // tiles) in 4 rows of 66 CTAs at a time, read once (docs/tuning.md); 2^23
      // in 4 rows of 66 and 2^24 in 2 of 132, each CTA reading 3-4 tiles twice, hinted (note
      // 74; one round of 4 rows where there were two of 2); 2^25 in one row of 264, hinted;
      // the scalar fallback unhinted.
      if (fwd && elem == 2) {
        EXPECT_EQ(rs::to_string(rs::plan_for(dir, 32, 1 << 22, elem, {vec, false}, h200, true)),
                  "split 4x66 ctas cta=256 tpr=256 vec=8x8 stash=3");
        EXPECT_EQ(rs::to_string(rs::plan_for(dir, 16, 1 << 23, elem, {vec, false}, h200, true)),
                  "split 4x66 ctas cta=256 tpr=256 vec=8x8 stash=3 hinted");
        EXPECT_EQ(rs::to_string(rs::plan_for(dir, 8, 1 << 24, elem, {vec, false}, h200, true)),
                  "split 2x132 ctas cta=256 tpr=256 vec=8x8 stash=3 hinted");
        EXPECT_EQ(rs::to_string(rs::plan_for(dir, 4, 1 << 25, elem, {vec, false}, h200, true)),
                  "split 1x264 ctas cta=256 tpr=256 vec=8x8 stash=3 hinted");
        EXPECT_EQ(rs::plan_for(dir, 8, 1 << 24, elem, {1, false}, h200, true).config,
                  rs::detail::configs::split);
      }
    }
}

TEST(Plan, RowsStreamedMostlyOnChipTakeNoWorkspace) {
  // fp32 forward rows beyond 16 wide cluster CTAs of 288 bytes a thread (36 tiles of 8192
  // columns) stream through 16 CTAs, each keeping a tile in registers and one stashed; given a
  // workspace, they stay streamed where at most three eighths of their tiles are read twice and
  // the launch fills eight waves of 3 CTAs an SM (198 rows of 16 CTAs on 132 SMs), and are split
  // otherwise. Rows of 33 to 36 tiles take those clusters, with a workspace or not.
  const auto fwd = [](std::int64_t rows, std::int64_t cols, bool workspace) {
    return rs::plan_for(rs::direction::forward, rows, cols, 4, {4, false}, h200, workspace);
  };
  for (std::int64_t tiles : {33, 34, 36, 37, 40, 44, 48, 51, 52, 56, 63, 64, 128})
    for (std::int64_t rows : {1, 64, 197, 198, 512}) {
      const std::int64_t cols = 8192 * tiles;
      const auto s = fwd(rows, cols, false), w = fwd(rows, cols, true);
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ": " + rs::to_string(s) +
                   " / " + rs::to_string(w));
      if (tiles <= 36) {
        EXPECT_EQ(s.config, rs::detail::configs::cluster_256t_288B);
        EXPECT_EQ(w.config, rs::detail::configs::cluster_256t_288B);
        EXPECT_EQ(w.workspace_bytes, 0);
        continue;
      }
      EXPECT_EQ(s.algo, algorithm::streaming);
      EXPECT_EQ(s.cluster_size, 16);
      EXPECT_EQ(s.stash_tiles, 1);
      EXPECT_EQ(rs::detail::streamed_twice_tiles(s, rs::direction::forward, 4), tiles - 32);
      const bool streams = tiles <= 51 && rows >= 198;
      EXPECT_EQ(w.algo, streams ? algorithm::streaming : algorithm::split);
      EXPECT_EQ(w.workspace_bytes == 0, streams);
    }
  // Backward rows streamed with one tile read twice stay streamed; with more, they are split.
  for (std::int64_t rows : {8, 64, 512}) {
    const auto b =
        rs::plan_for(rs::direction::backward, rows, 8192 * 33, 4, {4, false}, h200, true);
    EXPECT_EQ(b.algo, algorithm::streaming) << rows;
    const auto c =
        rs::plan_for(rs::direction::backward, rows, 8192 * 34, 4, {4, false}, h200, true);
    EXPECT_EQ(c.algo, algorithm::split) << rows;
  }
  const auto mb = rs::plan_for(rs::direction::backward, 512, 262143, 4, {4, true}, h200, true);
  EXPECT_EQ(mb.algo, algorithm::streaming);
  EXPECT_EQ(rs::detail::streamed_twice_tiles(mb, rs::direction::backward, 4), 1);
  // Without clusters, rows streamed through one CTA that reads a tile twice are split.
  for (std::int64_t rows : {1, 512, 100000}) {
    const auto one = rs::plan_for(rs::direction::forward, rows, 8192 * 3, 4, {4, false}, a100);
    const auto split =
        rs::plan_for(rs::direction::forward, rows, 8192 * 3, 4, {4, false}, a100, true);
    SCOPED_TRACE(rs::to_string(one) + " / " + rs::to_string(split));
    ASSERT_EQ(one.algo, algorithm::streaming);
    EXPECT_EQ(one.cluster_size, 1);
    EXPECT_EQ(rs::detail::streamed_twice_tiles(one, rs::direction::forward, 4), 1);
    EXPECT_EQ(split.algo, algorithm::split);
  }
}

TEST(Plan, OutOfPlaceRowsWithoutAWorkspaceKeepTheSplitsWorkspaceInTheOutput) {
  // Without a workspace, rows out of place are planned as with one where clusters exist, the
  // workspace in the output's first row (which holds it); in place, or without clusters, as
  // before (streamed).
  for (std::size_t elem : {std::size_t{4}, std::size_t{2}})
    for (auto dir : {rs::direction::forward, rs::direction::backward})
      for (int l = 0; l < 3; ++l)
        for (std::int64_t cols : {std::int64_t{262143}, std::int64_t{262145}, std::int64_t{300001},
                                  std::int64_t{600000}, std::int64_t{1} << 20,
                                  (std::int64_t{1} << 22) + 3, std::int64_t{1} << 24})
          for (std::int64_t rows : {1, 8, 13, 64, 1000}) {
            const int v = l == 2 ? 1 : static_cast<int>(16 / elem);
            const rs::row_layout in_place{v, l == 1, false, false};
            const rs::row_layout out_of_place{v, l == 1, false, true};
            const auto q = rs::plan_for(dir, rows, cols, elem, out_of_place, h200);
            const auto w = rs::plan_for(dir, rows, cols, elem, out_of_place, h200, true);
            const auto s = rs::plan_for(dir, rows, cols, elem, in_place, h200);
            SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " elem " +
                         std::to_string(elem) + " layout " + std::to_string(l) + ": " +
                         rs::to_string(q) + " / " + rs::to_string(w) + " / " + rs::to_string(s));
            EXPECT_FALSE(s.workspace_in_output);
            EXPECT_EQ(s.workspace_bytes, 0);
            EXPECT_FALSE(w.workspace_in_output);
            if (w.workspace_bytes > 0) {
              EXPECT_TRUE(q.workspace_in_output);
              EXPECT_EQ(q.config, w.config);
              EXPECT_EQ(q.row_groups, w.row_groups);
              EXPECT_EQ(q.split_ctas, w.split_ctas);
              EXPECT_EQ(q.stash_tiles, w.stash_tiles);
              EXPECT_EQ(q.workspace_bytes, w.workspace_bytes);
              EXPECT_GE(cols * static_cast<std::int64_t>(elem), q.workspace_bytes + 16);
              EXPECT_NE(rs::to_string(q).find(" workspace=output"), std::string::npos);
            } else {
              EXPECT_FALSE(q.workspace_in_output);
              EXPECT_EQ(q.config, s.config);
              EXPECT_EQ(q.cluster_size, s.cluster_size);
              EXPECT_EQ(q.stash_tiles, s.stash_tiles);
            }
            const auto none = rs::plan_for(dir, rows, cols, elem, out_of_place, a100);
            EXPECT_FALSE(none.workspace_in_output);
            EXPECT_EQ(none.workspace_bytes, 0);
          }
  // The rows of the benchmark's long shapes: split, workspace in the output.
  for (auto dir : {rs::direction::forward, rs::direction::backward})
    for (int k = 20; k <= 24; ++k) {
      const auto q = rs::plan_for(dir, std::int64_t{1} << (27 - k), std::int64_t{1} << k, 4,
                                  {4, false, false, true}, h200);
      EXPECT_EQ(q.algo, algorithm::split) << rs::to_string(q);
      EXPECT_TRUE(q.workspace_in_output);
    }
}

TEST(Plan, StreamingKeepsWhatFitsOnChip) {
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (auto dir : {rs::direction::forward, rs::direction::backward})
      for (int vec : {static_cast<int>(16 / elem), 1})
        for (auto const& d : {h200, hopper_portable, a100}) {
          const int tensors = rs::detail::tensors_of(dir);
          auto const& k = kernel_configs[rs::detail::configs::streaming_cluster];
          const int in_registers = rs::detail::keeps_last_tile(k, tensors, elem) ? 1 : 0;
          const int per_sm = rs::detail::ctas_per_sm(k, tensors, elem);
          for (std::int64_t cols = 1000; cols <= (std::int64_t{1} << 24); cols = cols * 5 / 4) {
            const auto p = rs::plan_for(dir, 3, cols, elem, {vec, false}, d);
            if (p.algo != algorithm::streaming) continue;
            SCOPED_TRACE("cols=" + std::to_string(cols) + " elem=" + std::to_string(elem) +
                         " vec=" + std::to_string(vec) + " " + rs::to_string(p));
            const std::int64_t tiles =
                (p.windows + 256 * p.vecs_per_thread - 1) / (256 * std::int64_t{p.vecs_per_thread});
            const std::int64_t share = (tiles + p.cluster_size - 1) / p.cluster_size;
            // No tile kept that a CTA does not have; the stashes of the CTAs an SM runs fit it.
            EXPECT_GE(p.stash_tiles, 0);
            EXPECT_LE(p.stash_tiles, std::max<std::int64_t>(0, share - in_registers));
            const std::int64_t half_bytes = std::int64_t{k.bytes} * k.threads_per_cta;  // dy's
            const std::int64_t per_cta = p.stash_tiles * rs::detail::stash_tile_bytes(k, tensors) +
                                         p.stash_halves * half_bytes + rs::detail::cta_smem_reserve;
            EXPECT_LE(per_cta * per_sm, d.shared_bytes_per_sm);
            EXPECT_LE(per_cta, d.shared_bytes_per_cta);
            // No half tiles planned (they ran slower streamed, see make_split_plan).
            EXPECT_EQ(p.stash_halves, 0);
            const int most = d.compute_capability >= 90 ? d.max_cluster_size : 1;
            // Forward CTAs stash at most one tile, and only what their registers do not hold:
            // as many CTAs as without a stash.
            const int full = rs::detail::stash_capacity(k, tensors, elem, d);
            const int capacity = dir == rs::direction::backward ? full : std::min(full, 1);
            const int quick =
                (dir == rs::direction::backward ? std::min(capacity, 1) : 0) + in_registers;
            if (share <= quick) {
              // The fewest CTAs that keep the row on chip with at most one stashed tile each.
              EXPECT_TRUE(rs::detail::reads_once(p, dir, elem));
              if (p.cluster_size > 1) {
                EXPECT_GT((tiles + p.cluster_size - 2) / (p.cluster_size - 1), quick);
              }
            } else {
              // Too long for that: as many CTAs as allowed, stashing what they can.
              EXPECT_EQ(p.cluster_size, std::min<std::int64_t>(most, tiles));
              EXPECT_EQ(p.stash_tiles, std::min<std::int64_t>(capacity, share - in_registers));
            }
          }
        }
  // fp32 backward rows of 147457..262144 columns (those of 16 CTAs of 144 bytes a thread do not
  // hold): read once at two CTAs an SM (one tile in registers, one in shared memory), instead
  // of one CTA an SM at 256 bytes a thread.
  for (std::int64_t cols : {147457, 151936, 262144}) {
    const auto p = rs::plan_for(rs::direction::backward, 883, cols, 4, {4, false}, h200);
    SCOPED_TRACE(rs::to_string(p));
    EXPECT_EQ(p.algo, algorithm::streaming);
    EXPECT_EQ(p.stash_tiles, 1);
    EXPECT_TRUE(rs::detail::reads_once(p, rs::direction::backward, 4));
  }
}

// Split rows (the workspace launchers, and out of place without one) of backward and 16-bit
// forward of which at least 7/8 of a group's CTAs read a tile twice (more tiles than their
// register tile and stash) take the hinted split configuration, the others the split one: fp32
// forward (hinted in either), the scalar fallback, and rows the CTAs hold or that fewer CTAs read
// twice. On the H200 backward from 759 tiles (about 12.4M 16-bit columns, 6.2M fp32) on; 16-bit
// forward rows of 2^23 and 2^24 columns in full launches split over more groups, hinted.
TEST(Plan, SplitRowsReadingTilesTwiceTakeTheHintedKernel) {
  auto const& hinted = kernel_configs[rs::detail::configs::split_hinted];
  auto const& plain = kernel_configs[rs::detail::configs::split];
  EXPECT_TRUE(hinted.l2_hints);
  EXPECT_FALSE(plain.l2_hints);
  EXPECT_FALSE(hinted.scalar_ok);
  // Kernels: the hinted one backward and 16-bit forward (vectors only), the plain one everywhere.
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    const int vec = static_cast<int>(16 / elem);
    const int h = rs::detail::configs::split_hinted, s = rs::detail::configs::split;
    EXPECT_TRUE(rs::detail::has_kernel(h, rs::direction::backward, vec, elem));
    EXPECT_EQ(rs::detail::has_kernel(h, rs::direction::forward, vec, elem), elem == 2);
    EXPECT_FALSE(rs::detail::has_kernel(h, rs::direction::backward, 1, elem));
    for (auto dir : {rs::direction::forward, rs::direction::backward})
      for (int v : {vec, 1}) EXPECT_TRUE(rs::detail::has_kernel(s, dir, v, elem));
  }
  // Which CTAs give hints: the hinted configuration's; in either, fp32 forward and the scalar fp32
  // backward fallback.
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (int vec : {int(16 / elem), 1}) {
      const auto fwd = rs::direction::forward, bwd = rs::direction::backward;
      EXPECT_TRUE(rs::detail::hints_second_reads(hinted, bwd, elem, vec));
      EXPECT_TRUE(rs::detail::hints_second_reads(hinted, fwd, elem, vec));
      EXPECT_EQ(rs::detail::hints_second_reads(plain, fwd, elem, vec), elem == 4);
      EXPECT_EQ(rs::detail::hints_second_reads(plain, bwd, elem, vec), elem == 4 && vec == 1);
    }
  // 16-bit, fp32 backward; 16-bit forward
  int hinted_plans[3] = {}, few_plans[3] = {}, held_plans[3] = {};
  for (rs::device_limits d : {h200, hopper_portable, a100})
    for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
      for (auto dir : {rs::direction::forward, rs::direction::backward})
        for (rs::row_layout layout :
             {rs::row_layout{int(16 / elem), false}, rs::row_layout{int(16 / elem), true},
              rs::row_layout{1, false}, rs::row_layout{int(16 / elem), false, false, true}})
          for (std::int64_t rows : {1, 8, 64})
            for (std::int64_t cols = std::int64_t{1} << 22; cols <= std::int64_t{1} << 25;
                 cols += (std::int64_t{1} << 17) + 3) {
              const bool with_workspace = !layout.out_of_place;
              const rs::plan p = rs::plan_for(dir, rows, cols, elem, layout, d, with_workspace);
              SCOPED_TRACE("elem=" + std::to_string(elem) + " rows=" + std::to_string(rows) +
                           " cols=" + std::to_string(cols) + " " + rs::to_string(p));
              if (p.algo != algorithm::split) {
                ASSERT_NE(p.config, rs::detail::configs::split_hinted);
                continue;
              }
              // CTAs of the group that read a tile twice: those whose share exceeds what they
              // hold (the register tile and, where their share reads twice, a full stash).
              const std::int64_t tiles = rs::detail::row_tiles(p), ctas = p.split_ctas;
              const bool twice = rs::detail::ceil_div(tiles, ctas) > p.stash_tiles + 1;
              const std::int64_t held = p.stash_tiles + 1, q = tiles / ctas, r = tiles % ctas;
              const std::int64_t reading_twice = !twice ? 0 : q > held ? ctas : r;
              const bool hint = (dir == rs::direction::backward || elem == 2) && p.vec > 1 &&
                                8 * reading_twice >= 7 * ctas;
              ASSERT_EQ(p.config,
                        hint ? rs::detail::configs::split_hinted : rs::detail::configs::split);
              ASSERT_TRUE(rs::detail::has_kernel(p.config, dir, p.vec, elem));
              if ((dir == rs::direction::backward || elem == 2) && p.vec > 1) {
                const int e = dir == rs::direction::forward ? 2 : elem == 4 ? 1 : 0;
                ++(hint ? hinted_plans[e] : twice ? few_plans[e] : held_plans[e]);
              }
            }
  for (int e : {0, 1, 2}) {
    EXPECT_GT(hinted_plans[e], 0);
    EXPECT_GT(few_plans[e], 0);
    EXPECT_GT(held_plans[e], 0);
  }
  // The H200: one group of 264 CTAs, each holding two tiles (a tile: 16K elements a tensor
  // 16-bit, 8K fp32; one in registers, one stashed). 2^23 16-bit columns (2^22 fp32) held;
  // hinted from 759 tiles on (231 of the 264 CTAs reading one twice); 2^24 16-bit (1024 tiles)
  // and 2^23 fp32 hinted, 2^24 fp32 (2048 tiles) too.
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    SCOPED_TRACE("elem=" + std::to_string(elem));
    const std::int64_t tile = 32768 / static_cast<std::int64_t>(elem);
    const auto bwd = [&](std::int64_t rows, std::int64_t cols) {
      return rs::plan_for(rs::direction::backward, rows, cols, elem, {int(16 / elem), false}, h200,
                          true);
    };
    EXPECT_EQ(bwd(16, 512 * tile).config, rs::detail::configs::split);
    EXPECT_EQ(bwd(14, 576 * tile).config, rs::detail::configs::split);
    EXPECT_EQ(bwd(8, 758 * tile).config, rs::detail::configs::split);
    EXPECT_EQ(bwd(8, 758 * tile).split_ctas, 264);
    EXPECT_EQ(bwd(8, 758 * tile + 1).config, rs::detail::configs::split_hinted);
    EXPECT_EQ(bwd(8, 758 * tile + 1).split_ctas, 264);
    EXPECT_EQ(bwd(10, 768 * tile).config, rs::detail::configs::split_hinted);
    EXPECT_EQ(bwd(8, 1024 * tile).config, rs::detail::configs::split_hinted);
    EXPECT_EQ(rs::to_string(bwd(8, 1024 * tile)),
              "split 1x264 ctas cta=256 tpr=256 vec=" + std::to_string(16 / elem) +
                  "x8 stash=1 halves=1 hinted");
    EXPECT_EQ(rs::to_string(bwd(16, 512 * tile)),
              "split 1x264 ctas cta=256 tpr=256 vec=" + std::to_string(16 / elem) + "x8 stash=1");
    EXPECT_EQ(bwd(8, std::int64_t{1} << 24).config, rs::detail::configs::split_hinted);
    // The scalar fallback keeps the split configuration (fp32: hinted in it).
    EXPECT_EQ(rs::plan_for(rs::direction::backward, 8, std::int64_t{1} << 24, elem, {1, false},
                           h200, true)
                  .config,
              rs::detail::configs::split);
  }
  // fp32 rows of 3M columns: two groups of 132 CTAs, 120 of them (91%) reading a tile twice.
  const rs::plan three_m = rs::plan_for(rs::direction::backward, 42, 3 * (std::int64_t{1} << 20), 4,
                                        {4, false}, h200, true);
  EXPECT_EQ(three_m.row_groups, 2);
  EXPECT_EQ(three_m.config, rs::detail::configs::split_hinted);
}

// Each tier's selector plans only its own tier, and plan_for takes the first selector that plans:
// short rows hold at most 16 vectors, one CTA a row only one-CTA configurations (or its staged
// CTA of 40 KB), cluster_plan only vectorised rows beyond one CTA, long_row_plan streaming or
// split rows. Over random calls on the H200 and a device without clusters.
TEST(Plan, EachTierSelectorPlansItsTier) {
  namespace d = rs::detail;
  std::mt19937_64 rng(12345);
  for (auto const& dev : {h200, a100})
    for (int i = 0; i < 20000; ++i) {
      const auto dir = rng() % 2 ? rs::direction::forward : rs::direction::backward;
      const std::size_t elem = rng() % 2 ? 2 : 4;
      const int vec = rng() % 4 ? static_cast<int>(16 / elem) : 1;
      rs::row_layout layout{vec, vec > 1 && rng() % 2 == 0, rng() % 2 == 0, rng() % 2 == 0};
      const std::int64_t cols =
          1 + static_cast<std::int64_t>(std::exp(std::uniform_real_distribution<>(0, 17)(rng)));
      const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 5000);
      const bool ws = rng() % 2 == 0;
      const std::int64_t head = layout.shifted ? vec - 1 : 0;
      const d::plan_call call{dir,
                              rows,
                              cols,
                              elem,
                              layout,
                              dev,
                              ws,
                              d::tuning_for(dev.compute_capability),
                              d::ceil_div(cols + head, vec),
                              dev.compute_capability >= 90 ? dev.max_cluster_size : 1};
      SCOPED_TRACE("cols=" + std::to_string(cols) + " rows=" + std::to_string(rows));
      const auto short_rows = d::short_row_plan(call);
      const auto one_cta = d::one_cta_plan(call);
      const auto clusters = vec > 1 ? d::cluster_plan(call) : std::nullopt;
      const rs::plan long_rows = d::long_row_plan(call);
      if (short_rows) {
        EXPECT_EQ(short_rows->rows_per_thread, 8);
        EXPECT_LE(short_rows->windows, 16);
      }
      if (one_cta) {
        EXPECT_TRUE(d::configs::is_one_cta(one_cta->config) ||
                    one_cta->config == d::configs::staged_40KB);
      }
      if (clusters) {
        EXPECT_TRUE(clusters->cluster_size > 1 || clusters->algo != rs::algorithm::registers ||
                    clusters->config == d::configs::one_cta_512);
      }
      EXPECT_TRUE(long_rows.algo == rs::algorithm::streaming ||
                  d::splits(kernel_configs[long_rows.config]));
      const rs::plan want = short_rows ? *short_rows
                            : one_cta  ? *one_cta
                            : clusters ? *clusters
                                       : long_rows;
      ASSERT_TRUE(rs::plan_for(dir, rows, cols, elem, layout, dev, ws) == want);
      ASSERT_FALSE(rs::plan_for(dir, rows, cols, elem, layout, dev, ws) != want);
    }
}
