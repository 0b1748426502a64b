// SPDX-License-Identifier: Apache-2.0
// The GPU test suite, typed over the element type. Each test_gpu_<type>.cu instantiates it for
// one type, so the three types compile in parallel. Every test skips, with its reason, when no
// CUDA device is present.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "gpu_harness.cuh"

namespace rowsoftmax::test {

template <class T>
class Gpu : public ::testing::Test {
 protected:
  void SetUp() override { ROWSOFTMAX_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE_P(Gpu);

template <class T>
constexpr std::int64_t vec_of() {
  return 16 / sizeof(T);
}

inline std::int64_t round_up(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b * b;
}

/// The limits the launchers plan with on the current device.
inline cudaError_t current_device_limits(device_limits* out) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  return query_device_limits(device, out);
}

/// The three layouts the planner distinguishes, for rows of `cols`: every row 16-byte aligned;
/// every row equally misaligned in input and output (a peeled head); input and output
/// misaligned differently (the scalar fallback).
template <class T>
std::vector<shape> layouts(std::int64_t rows, std::int64_t cols) {
  const std::int64_t v = vec_of<T>();
  const std::int64_t aligned = round_up(cols, v);
  return {
      {rows, cols, aligned, aligned, 0, 0, false},
      {rows, cols, aligned + 1, aligned + 1, 1, 1, false},
      {rows, cols, aligned, aligned, 0, 1, false},
  };
}

template <class T>
row_layout layout_for(shape const& s) {
  const std::int64_t v = vec_of<T>();
  if (v > 1 && s.in_offset % v == s.outo() % v && (s.rows == 1 || s.ins() % v == s.outs() % v))
    return {static_cast<int>(v), s.in_offset % v != 0 || (s.rows > 1 && s.ins() % v != 0),
            s.rows == 1 || (s.ins() == s.cols && s.outs() == s.cols), !s.in_place};
  return {1, false, false, !s.in_place};
}

/// Contiguous rows (row stride == cols), at the vector's alignment and one element past it:
/// misaligned rows where cols is not a multiple of the vector, or at the offset (tiled where
/// short, see configs::first_tiled).
template <class T>
std::vector<shape> contiguous_layouts(std::int64_t rows, std::int64_t cols) {
  return {{rows, cols, cols, cols, 0, 0, false}, {rows, cols, cols, cols, 1, 1, false}};
}

/// Every cols in 1..`most` at which the plan for `rows` rows of `layout` changes configuration,
/// cluster size or (within one CTA) threads per row, with its neighbour below.
template <class T>
std::vector<std::int64_t> plan_thresholds(row_layout layout, std::int64_t rows,
                                          std::int64_t most = std::int64_t{1} << 20) {
  device_limits limits;
  if (current_device_limits(&limits) != cudaSuccess) return {};
  std::vector<std::int64_t> out;
  auto key = [&](direction dir, std::int64_t cols) {
    const plan p = plan_for<T>(dir, rows, cols, layout, limits);
    return std::tuple(p.config, p.cluster_size, p.cluster_size > 1 ? 0 : p.threads_per_row,
                      p.stash_tiles);
  };
  for (direction dir : {direction::forward, direction::backward}) {
    auto previous = key(dir, 1);
    for (std::int64_t cols = 2; cols <= most; ++cols) {
      const auto k = key(dir, cols);
      if (k != previous) {
        out.push_back(cols - 1);
        out.push_back(cols);
      }
      previous = k;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Runs before the other tests of a type, so the first use of each cluster kernel (attribute
// and occupancy queries) happens inside a stream capture.
TYPED_TEST_P(Gpu, GraphCapture) {
  using T = TypeParam;
  launcher<T> in_graph;
  in_graph.graph = true;
  for (std::int64_t cols : {1000, 50257, 300001}) {
    check_forward<T>({5, cols}, seed_of(cols, 1), fill::random, in_graph);
    check_backward<T>({5, cols}, seed_of(cols, 2), fill::random, in_graph);
  }
  // The workspace launchers: a memset and a cooperative launch in the graph (backward split,
  // forward split or, 16-bit, staged split, at 600001 columns and 2^20 + 3).
  launcher<T> split_in_graph = in_graph;
  split_in_graph.workspace = true;
  for (std::int64_t cols : {std::int64_t{600001}, (std::int64_t{1} << 20) + 3}) {
    check_forward<T>({3, cols}, seed_of(cols, 3), fill::random, split_in_graph);
    check_backward<T>({3, cols}, seed_of(cols, 4), fill::random, split_in_graph);
  }
}

TYPED_TEST_P(Gpu, ShapeTable) {
  using T = TypeParam;
  const std::int64_t table[] = {1,   2,    3,    7,    31,   32,    33,    255,
                                256, 1000, 1023, 4095, 4097, 16385, 50257, 131072};
  for (std::int64_t cols : table)
    for (std::int64_t rows : {1, 3, 1027}) {
      check_forward<T>({rows, cols}, seed_of(cols, rows));
      check_backward<T>({rows, cols}, seed_of(cols, rows, 1));
    }
}

/// The fewest rows of `cols` whose launch takes more than two 128-thread CTAs an SM (16 KB of a
/// row each), above which forward rows leave those CTAs (see plan_for); at least 3.
template <class T>
std::int64_t rows_past_few(row_layout layout, std::int64_t cols, device_limits const& limits) {
  const std::int64_t windows = plan_for<T>(direction::forward, 1, cols, layout, limits).windows;
  const std::int64_t ctas = detail::ceil_div(
      windows, detail::window_capacity(detail::kernel_configs[detail::configs::cluster_128t],
                                       layout.vec, sizeof(T), 1));
  return std::max<std::int64_t>(3, 2 * std::int64_t{limits.sm_count} / ctas + 1);
}

// cols just below and at every point where the plan changes (register tiers, cluster sizes,
// the wide cluster, streaming), for each layout; rows 3, and a partial last CTA for small rows.
// Then, forward, the points where it changes for launches of more than two 128-thread CTAs an SM
// (a few rows take the most such CTAs, up to 16), up to 17 such CTAs' elements: the staged tier
// and the 256-thread clusters that launches of a few rows do not choose; each with the fewest
// rows that make such a launch, and with those rows (more than 8 128-thread CTAs an SM for
// fp32 rows of more than 8 of them: wide clusters) where their plan differs (backward plans
// there do not depend on the rows).
TYPED_TEST_P(Gpu, TierThresholds) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  const std::int64_t many = 2 * std::int64_t{limits.sm_count} / 3 + 1;       // 3 CTAs a row
  const std::int64_t narrow = 16384 / static_cast<std::int64_t>(sizeof(T));  // a 128-thread CTA
  for (int l = 0; l < 3; ++l) {
    const row_layout layout = layout_for<T>(layouts<T>(3, 64)[static_cast<std::size_t>(l)]);
    const auto cols_list = plan_thresholds<T>(layout, 3);
    ASSERT_FALSE(cols_list.empty());
    for (std::int64_t cols : cols_list) {
      for (std::int64_t rows :
           {std::int64_t{3}, cols <= 4096 ? std::int64_t{131} : std::int64_t{0}}) {
        if (rows == 0) continue;
        const shape s = layouts<T>(rows, cols)[static_cast<std::size_t>(l)];
        ASSERT_EQ(layout_for<T>(s).vec, layout.vec);
        check_forward<T>(s, seed_of(cols, rows, l));
        check_backward<T>(s, seed_of(cols, rows, l + 3));
      }
    }
    if (layout.vec == 1) continue;  // the scalar fallback has no 128-thread clusters
    for (std::int64_t cols : plan_thresholds<T>(layout, many, 17 * narrow)) {
      if (cols <= 4096) continue;  // above, with 131 rows
      const std::int64_t past = rows_past_few<T>(layout, cols, limits);
      const plan a = plan_for<T>(direction::forward, past, cols, layout, limits);
      const plan b = plan_for<T>(direction::forward, many, cols, layout, limits);
      std::vector<std::int64_t> rows_list{past};
      if (a.config != b.config || a.cluster_size != b.cluster_size) rows_list.push_back(many);
      for (std::int64_t rows : rows_list) {
        const shape s = layouts<T>(rows, cols)[static_cast<std::size_t>(l)];
        ASSERT_EQ(layout_for<T>(s).shifted, layout.shifted);
        check_forward<T>(s, seed_of(cols, rows, l));
      }
    }
  }
}

TYPED_TEST_P(Gpu, StridesOffsetsAndInPlace) {
  using T = TypeParam;
  for (std::int64_t cols : {1, 7, 33, 1000, 4097, 20000, 50257}) {
    std::vector<shape> cases = layouts<T>(37, cols);
    cases.push_back({37, cols, cols + 3, cols + 5, 0, 0, false});  // unequal odd strides
    cases.push_back({37, cols, cols + 7, 0, 1, 0, true});          // in place, padded rows
    cases.push_back({37, cols, 0, 0, 3, 0, true});                 // in place, contiguous, offset
    cases.push_back({1, cols, 0, 0, 1, 1, false});                 // one misaligned row
    for (std::size_t i = 0; i < cases.size(); ++i) {
      check_forward<T>(cases[i], seed_of(cols, static_cast<std::int64_t>(i)));
      check_backward<T>(cases[i], seed_of(cols, static_cast<std::int64_t>(i), 9));
    }
  }
}

TYPED_TEST_P(Gpu, SpecialValues) {
  using T = TypeParam;
  for (std::int64_t cols : {1, 2, 33, 4097, 50257, 131072, 300001, 600000})
    for (shape s : layouts<T>(16, cols)) {
      check_forward<T>(s, seed_of(cols, s.out_offset, 5), fill::special);
      check_backward<T>(s, seed_of(cols, s.out_offset, 6), fill::special);
    }
}

TYPED_TEST_P(Gpu, RandomShapes) {
  using T = TypeParam;
  rng g(20261130);
  for (int i = 0; i < 40; ++i) {
    shape s;
    s.rows = 1 + g.below(300);
    s.cols = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::exp(g.uniform() * std::log(400000.0))));
    s.in_offset = g.below(vec_of<T>());
    s.out_offset = g.uniform() < 0.5 ? s.in_offset : g.below(vec_of<T>());
    s.in_stride = s.cols + (g.uniform() < 0.5 ? 0 : g.below(17));
    s.out_stride = g.uniform() < 0.5 ? s.in_stride : s.cols + g.below(17);
    s.in_place = g.uniform() < 0.2;
    check_forward<T>(s, g.next());
    check_backward<T>(s, g.next());
  }
}

// Every kernel configuration that can hold the row (and every streaming one), forced through
// the dispatcher (130 columns: every one-CTA configuration of 4 to 16 threads a row, 600: of
// whole warps, also those the planner gives 16-bit rows alone), clustered ones with the fewest CTAs
// that hold the row and with 16: the plans other devices (sm_80, no size-16 clusters) get, clusters
// whose CTAs own a few windows each, and streaming over rows that fit one tile. Each direction
// runs the configurations that have a kernel for it and the type (has_kernel: those the planner
// can choose; the staged ones forward only, 16-bit but for CTAs of 32 KB) and refuses the others.
TYPED_TEST_P(Gpu, EveryConfigurationThatHoldsTheRow) {
  using T = TypeParam;
  for (std::int64_t cols : {130, 600, 5000, 70000})
    for (shape s : layouts<T>(5, cols)) {
      const row_layout layout = layout_for<T>(s);
      for (int c = 0; c < detail::num_kernel_configs; ++c) {
        auto const& k = detail::kernel_configs[c];
        if ((layout.vec == 1 && !k.scalar_ok) || (k.tiled && !layout.contiguous)) continue;
        const std::int64_t windows = detail::row_windows(k, layout, cols);
        const std::int64_t fewest = std::max<std::int64_t>(
            2, detail::ceil_div(windows, detail::window_capacity(k, layout.vec, sizeof(T), 1)));
        // Staged rows also in a cluster of one, as 16-bit forward rows of one CTA are planned.
        const std::int64_t sizes[] = {k.algo == algorithm::staged ? 1 : 0, k.clustered ? fewest : 1,
                                      k.clustered || detail::splits(k) ? 16 : 0};
        for (std::int64_t n : sizes) {
          if (n == 0 || n > 16 || (n == 16 && fewest == 16)) continue;
          plan p = detail::make_plan(c, layout, s.rows, windows, sizeof(T), int(n));
          // Split: 2 rows in flight of 3 CTAs (3 rounds, both parities), n == 16 also keeping a
          // tile in shared memory: tiles from the stash, from registers and read again. Staged
          // split: 2 rows in flight (3 rounds, both parities) of the fewest CTAs (at least 3) or
          // of 16, most of which then hold a few windows.
          // Streaming: one tile kept in shared memory (besides the last in registers), so a
          // CTA of several tiles takes them from the stash, from registers and read again;
          // backward also with a half tile (below).
          if (k.algo == algorithm::streaming) p.stash_tiles = 1;
          if (k.algo == algorithm::split) {
            p = detail::with_groups(p, 2, 3);
            p.stash_tiles = n == 16 ? 1 : 0;
          }
          if (k.algo == algorithm::staged_split)
            p = detail::with_groups(p, 2, n == 16 ? 16 : std::max<std::int64_t>(3, fewest));
          if (!detail::plan_holds(p)) continue;
          launcher<T> forced;
          forced.forced = p;
          SCOPED_TRACE("config " + std::to_string(c) + ": " + to_string(p));
          // A configuration without a kernel for a direction (has_kernel: staged backward, and
          // those the planner never gives the type) is refused for it, nothing launched.
          device_buffer<T> buf(3 * s.rows * cols);
          ASSERT_NE(buf.ptr, nullptr);
          const detail::tensor_arg t[] = {{buf.ptr, cols, false},
                                          {buf.ptr + s.rows * cols, cols, false},
                                          {buf.ptr + 2 * s.rows * cols, cols, true}};
          if (detail::has_kernel(c, direction::forward, layout.vec, sizeof(T))) {
            check_forward<T>(s, seed_of(cols, c * 17 + n, 11), fill::random, forced);
          } else {
            const detail::tensor_arg tf[] = {t[0], t[2]};
            EXPECT_EQ(detail::run<detail::forward_op<T>>(
                          p, tf, {buf.ptr, cols, buf.ptr + 2 * s.rows * cols, cols, s.rows, cols},
                          nullptr),
                      cudaErrorInvalidValue);
          }
          if (detail::has_kernel(c, direction::backward, layout.vec, sizeof(T))) {
            check_backward<T>(s, seed_of(cols, c * 17 + n, 12), fill::random, forced);
            // Streaming and split CTAs also keeping the dy of a tile beyond their stash (a
            // streaming CTA of five tiles at 70000 columns: stashed, half, read again twice, in
            // registers).
            if (k.algo == algorithm::streaming || k.algo == algorithm::split) {
              forced.forced->stash_halves = 1;
              SCOPED_TRACE("halves=1");
              check_backward<T>(s, seed_of(cols, c * 17 + n, 37), fill::random, forced);
            }
          } else {
            EXPECT_EQ(detail::run<detail::backward_op<T>>(
                          p, t,
                          {buf.ptr, cols, buf.ptr + s.rows * cols, cols,
                           buf.ptr + 2 * s.rows * cols, cols, s.rows, cols},
                          nullptr),
                      cudaErrorInvalidValue);
          }
        }
      }
    }
}

// Short rows, 8 a thread (configurations configs::first_short_rows..configs::last_short_rows, and
// tiled, configs::first_tiled..configs::last_tiled): every cols of at most 16 vectors, planned
// (aligned, misaligned, scalar, contiguous at two alignments) and forced through every short-row
// configuration that holds the row (the tiled ones for contiguous rows), with enough rows that
// every thread's eight rows hold some and the last CTA is part full; random and special values.
TYPED_TEST_P(Gpu, ShortRowsSeveralAThread) {
  using T = TypeParam;
  const std::int64_t v = vec_of<T>();
  for (std::int64_t cols = 1; cols <= 16 * v; cols += cols < 2 * v ? 1 : 3) {
    std::vector<shape> shapes = layouts<T>(3, cols);
    for (shape s : contiguous_layouts<T>(3, cols)) shapes.push_back(s);
    for (shape s : shapes) {
      const row_layout layout = layout_for<T>(s);
      for (int c = detail::configs::first_short_rows - 1; c <= detail::configs::last_tiled; ++c) {
        launcher<T> run;  // c below the first: planned (up to 1024 rows a CTA)
        auto const& k = detail::kernel_configs[std::max(c, detail::configs::first_short_rows)];
        const std::int64_t windows = detail::row_windows(k, layout, cols);
        if (c >= detail::configs::first_short_rows &&
            (layout.vec == 1 || detail::window_capacity(k, layout.vec, sizeof(T)) < windows ||
             (k.tiled && !layout.contiguous)))
          continue;
        s.rows = 2 * (c < detail::configs::first_short_rows
                          ? 1024
                          : k.threads_per_cta / k.threads_per_row * k.rows_per_thread) +
                 37;
        ASSERT_EQ(layout_for<T>(s).shifted, layout.shifted);
        if (c >= detail::configs::first_short_rows)
          run.forced = detail::make_plan(c, layout, s.rows, windows, sizeof(T));
        SCOPED_TRACE("cols " + std::to_string(cols) + " config " + std::to_string(c));
        const bool special = cols % 5 == 1;
        check_forward<T>(s, seed_of(cols, c, 41), special ? fill::special : fill::random, run);
        // (No tiled kernel backward for fp32, nor of 8 threads a row for 16-bit: has_kernel.)
        if (c < detail::configs::first_short_rows ||
            detail::has_kernel(c, direction::backward, layout.vec, sizeof(T)))
          check_backward<T>(s, seed_of(cols, c, 42), special ? fill::special : fill::random, run);
      }
    }
  }
}

// Rows longer than a cluster holds, without a workspace, in place: streamed (out of place they
// are split, see SplitRowsWithTheWorkspaceInTheOutput; backward CTAs on the H200 keep the dy of a
// tile beyond their stash). Aligned and shifted rows.
TYPED_TEST_P(Gpu, LongRowsStream) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  for (std::int64_t cols : {(std::int64_t{1} << 20) + 3, (std::int64_t{1} << 22) + 1})
    for (std::int64_t offset : {0, 1}) {
      const std::int64_t stride = round_up(cols, vec_of<T>()) + offset;
      const shape s{2, cols, stride, stride, offset, offset, true};
      for (direction dir : {direction::forward, direction::backward})
        EXPECT_EQ(plan_for<T>(dir, 2, cols, layout_for<T>(s), limits).algo, algorithm::streaming);
      check_forward<T>(s, seed_of(cols, s.out_offset, 13));
      check_backward<T>(s, seed_of(cols, s.out_offset, 14));
    }
}

// Rows longer than a cluster holds, without a workspace, out of place (on devices with
// clusters): split as with one, the workspace kept in the output's first row, whose windows it
// covers the split kernels leave to held_back_kernel. One row, 13 (several rounds of rows in
// flight; 16-bit forward: the staged split) and 5 of 2^22 + 3 (16-bit forward: split), every
// layout (the workspace from the row's first 16-byte boundary: aligned, a peeled head, element
// access); special values; the plan query tells where the workspace is, and in place none.
TYPED_TEST_P(Gpu, SplitRowsWithTheWorkspaceInTheOutput) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  const bool clusters = limits.compute_capability >= 90 && limits.max_cluster_size >= 2;
  const std::int64_t cols = (std::int64_t{1} << 20) + 3;
  auto planned = [&](direction dir, shape const& s) {
    return plan_for<T>(dir, s.rows, s.cols, layout_for<T>(s), limits);
  };
  for (std::int64_t rows : {1, 13})
    for (shape s : layouts<T>(rows, cols)) {
      SCOPED_TRACE(s.str());
      if (clusters && rows == 13)
        for (direction dir : {direction::forward, direction::backward}) {
          const plan p = planned(dir, s);
          EXPECT_TRUE(p.workspace_in_output) << to_string(p);
          EXPECT_TRUE(p.algo == algorithm::split || p.algo == algorithm::staged_split)
              << to_string(p);
        }
      check_forward<T>(s, seed_of(cols, rows, 41));
      check_backward<T>(s, seed_of(cols, rows, 42));
    }
  for (shape s : layouts<T>(4, cols)) {
    check_forward<T>(s, seed_of(cols, s.out_offset, 43), fill::special);
    check_backward<T>(s, seed_of(cols, s.out_offset, 44), fill::special);
  }
  for (int i : {0, 1}) {
    const shape s = layouts<T>(5, (std::int64_t{1} << 22) + 3)[static_cast<std::size_t>(i)];
    if (clusters) EXPECT_EQ(planned(direction::forward, s).algo, algorithm::split);
    check_forward<T>(s, seed_of(s.cols, 5, 45));
  }
  // The plan query (which reads no tensor: addresses of tensors that do not overlap): the
  // workspace in the output out of place, none in place.
  T *const a = fake_tensor<T>(0), *const b = fake_tensor<T>(1), *const c = fake_tensor<T>(2);
  plan out, in;
  ROWSOFTMAX_CUDA_OK(softmax_forward_plan<T>(a, cols, b, cols, 2, cols, &out));
  ROWSOFTMAX_CUDA_OK(softmax_forward_plan<T>(a, cols, a, cols, 2, cols, &in));
  EXPECT_EQ(out.workspace_in_output, clusters) << to_string(out);
  EXPECT_FALSE(in.workspace_in_output) << to_string(in);
  EXPECT_EQ(in.algo, algorithm::streaming) << to_string(in);
  ROWSOFTMAX_CUDA_OK(softmax_backward_plan<T>(a, cols, b, cols, c, cols, 2, cols, &out));
  ROWSOFTMAX_CUDA_OK(softmax_backward_plan<T>(a, cols, b, cols, a, cols, 2, cols, &in));
  EXPECT_EQ(out.workspace_in_output, clusters) << to_string(out);
  EXPECT_EQ(in.algo, algorithm::streaming) << to_string(in);
}

// Plans that only full launches (more CTAs than SMs) choose: fp32 forward rows of more than 8
// 128-byte CTAs in wide clusters (also in launches of more CTAs than three quarters of the SMs),
// 16-bit backward rows of 11 or 12 cluster CTAs streamed through half as many (one stashed tile
// each), of 10 and 15 kept in clusters; 16-bit forward rows are staged (10..15 CTAs here).
// 17 rows, every layout.
TYPED_TEST_P(Gpu, FullLaunchesOfClusterRows) {
  using T = TypeParam;
  const std::int64_t cta = 32768 / static_cast<std::int64_t>(sizeof(T));  // elements of one CTA
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  if (limits.compute_capability >= 90 && limits.sm_count < 17 * 10) {  // the plans named above
    const plan f =
        plan_for<T>(direction::forward, 17, 9 * cta + 1, {int(16 / sizeof(T)), false}, limits);
    const plan b =
        plan_for<T>(direction::backward, 17, 9 * cta + 1, {int(16 / sizeof(T)), false}, limits);
    EXPECT_EQ(f.algo, sizeof(T) == 2 ? algorithm::staged : algorithm::cluster) << to_string(f);
    EXPECT_EQ(f.cluster_size, sizeof(T) == 2 ? 10 : 5) << to_string(f);
    EXPECT_EQ(b.algo, algorithm::cluster) << to_string(b);
    const plan b11 =
        plan_for<T>(direction::backward, 17, 10 * cta + 1, {int(16 / sizeof(T)), true}, limits);
    EXPECT_EQ(b11.algo, sizeof(T) == 2 ? algorithm::streaming : algorithm::cluster)
        << to_string(b11);
  }
  for (std::int64_t cols : {9 * cta + 1, 10 * cta + 1, 12 * cta - 5, 15 * cta})
    for (shape s : layouts<T>(17, cols)) {
      check_forward<T>(s, seed_of(cols, s.out_offset, 21));
      check_backward<T>(s, seed_of(cols, s.out_offset, 22));
    }
  for (shape s : layouts<T>(17, 10 * cta)) {
    check_forward<T>(s, seed_of(s.cols, s.out_offset, 23), fill::special);
    check_backward<T>(s, seed_of(s.cols, s.out_offset, 24), fill::special);
  }
}

// Clusters of 144 bytes a thread (backward rows 16 CTAs of 128 bytes do not hold) and of 288
// (fp32 forward, beside 256), staged CTAs of 40 and 48 KB (16-bit forward rows 16 of 32 KB do
// not hold): on devices with clusters of 16, the plans at the edges (the last window of 16 such
// CTAs and one more: streamed, or the next size), in 17 rows of every layout, random and special
// values; on the H200, 288 bytes at 163841 columns (9 CTAs, not 11 of 256), 256 at 262144 (16,
// not 15 of 288: the H200 runs clusters of 16 more fully).
TYPED_TEST_P(Gpu, ClustersOfMoreBytesAThread) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  const bool fp32 = sizeof(T) == 4;
  // Columns of 16 CTAs of 144 bytes a thread, aligned (256 threads x 9 vectors each).
  const std::int64_t most144 = 16 * 256 * 9 * vec_of<T>();
  const std::int64_t most288 = 2 * most144;
  const row_layout aligned{int(vec_of<T>()), false};
  if (limits.compute_capability >= 90 && limits.max_cluster_size == 16) {
    const plan b = plan_for<T>(direction::backward, 17, most144, aligned, limits);
    EXPECT_EQ(b.config, detail::configs::cluster_256t_144B) << to_string(b);
    EXPECT_EQ(b.cluster_size, 16) << to_string(b);
    const plan b1 = plan_for<T>(direction::backward, 17, most144 + 1, aligned, limits);
    EXPECT_EQ(b1.algo, algorithm::streaming) << to_string(b1);
    if (fp32) {
      const plan f = plan_for<T>(direction::forward, 17, most288, aligned, limits);
      EXPECT_EQ(f.config, detail::configs::cluster_256t_288B) << to_string(f);
      EXPECT_EQ(f.cluster_size, 16) << to_string(f);
      const plan f1 = plan_for<T>(direction::forward, 17, most288 + 1, aligned, limits);
      EXPECT_EQ(f1.algo, algorithm::streaming) << to_string(f1);
    }
  }
  // 16-bit forward: staged CTAs of 40 KB past 16 of 32 KB, of 48 KB past 16 of 40, 64 past 48.
  const std::int64_t staged[] = {16 * 16384 + 1, 16 * 20480, 16 * 20480 + 1, 16 * 24576,
                                 16 * 24576 + 1};
  if (!fp32 && limits.compute_capability >= 90 && limits.max_cluster_size == 16) {
    const int configs[] = {detail::configs::staged_40KB, detail::configs::staged_40KB,
                           detail::configs::staged_48KB, detail::configs::staged_48KB,
                           detail::configs::staged_64KB};
    for (int i = 0; i < 5; ++i) {
      const plan f = plan_for<T>(direction::forward, 17, staged[i], aligned, limits);
      EXPECT_EQ(f.config, configs[i]) << to_string(f);
    }
  }
  std::vector<std::int64_t> cols_list{most144 - 3, most144, most144 + 1};
  if (fp32) cols_list.insert(cols_list.end(), {most288 - 3, most288, most288 + 1});
  if (!fp32) cols_list.insert(cols_list.end(), std::begin(staged), std::end(staged));
  for (std::int64_t cols : cols_list)
    for (shape s : layouts<T>(17, cols)) {
      if (cols > most144 + 1) {
        check_forward<T>(s, seed_of(cols, s.out_offset, 31));
      } else {
        check_backward<T>(s, seed_of(cols, s.out_offset, 32));
      }
    }
  for (shape s : layouts<T>(17, most144 - 3)) {
    check_forward<T>(s, seed_of(s.cols, s.out_offset, 33), fill::special);
    check_backward<T>(s, seed_of(s.cols, s.out_offset, 34), fill::special);
  }
  if constexpr (sizeof(T) == 4) {
    for (std::int64_t cols : {163841, 262144}) {
      const shape s = layouts<T>(17, cols)[cols % 4 == 0 ? 0 : 1];
      if (limits.compute_capability >= 90 && limits.max_cluster_size == 16 &&
          limits.sm_count == 132 && limits.clusters_at_two_an_sm[16] == 14) {  // the H200's
        const plan p = plan_for<T>(direction::forward, 17, cols, layout_for<T>(s), limits);
        EXPECT_EQ(p.config, cols == 163841 ? detail::configs::cluster_256t_288B
                                           : detail::configs::cluster_256t_256B)
            << to_string(p);
      }
      check_forward<T>(s, seed_of(cols, 17, 35));
    }
  }
}

// fp32 forward rows of 5 to 16 staged CTAs (or of 4 more than 7/8 full) in launches of more than
// 3 and at most 60 such CTAs an SM (plan_for): the planner's edges on this device (the fewest rows
// above 3 an SM and the rows below; the most rows at 60 an SM and one more, aligned), every layout
// at the fewest rows, 4 CTAs (28673 columns, just over 7/8 full), 5 (32769, a fifth of the slots
// idle), 7 (50257, misaligned rows), 16 (131072), special values. The same shapes for 16-bit
// rows, which are staged in any launch, and theirs of one staged CTA (below).
TYPED_TEST_P(Gpu, StagedRowsOfMidLaunches) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  const std::int64_t sms = limits.sm_count;
  const bool staged_here = limits.compute_capability >= 90 && limits.max_cluster_size >= 16;
  const row_layout aligned{int(16 / sizeof(T)), false};
  // Staged CTAs (32 KB) an aligned fp32 row of `cols` takes, which the planner's rule counts;
  // the 16-bit types run the same shapes.
  const auto fp32_ctas = [](std::int64_t cols) {
    return detail::ceil_div(
        detail::ceil_div(cols, 4),
        detail::window_capacity(detail::kernel_configs[detail::configs::staged_32KB], 4, 4, 1));
  };
  for (std::int64_t cols : {28673, 32769, 50257, 131072}) {
    const std::int64_t fewest = 3 * sms / fp32_ctas(cols) + 1;
    if (staged_here && sizeof(T) == 4) {
      EXPECT_EQ(plan_for<T>(direction::forward, fewest, cols, aligned, limits).algo,
                algorithm::staged);
      EXPECT_NE(plan_for<T>(direction::forward, fewest - 1, cols, aligned, limits).algo,
                algorithm::staged);
    }
    check_forward<T>(layouts<T>(fewest - 1, cols)[0], seed_of(cols, fewest, 31));
    for (shape s : layouts<T>(fewest, cols)) {
      check_forward<T>(s, seed_of(cols, s.out_offset, 32));
      check_forward<T>(s, seed_of(cols, s.out_offset, 33), fill::special);
    }
  }
  if (sizeof(T) == 2) {
    // 16-bit rows of the widest one-CTA configuration (2049-2304 windows): one staged CTA of
    // 40 KB a row in launches of more than 24 rows an SM, registers up to that; rows aligned,
    // misaligned (a head) and misaligned apart (the scalar fallback), random and special values.
    const std::int64_t most = 24 * sms;
    for (std::int64_t cols : {16385, 18432}) {
      if (staged_here) {
        const plan p = plan_for<T>(direction::forward, most + 1, cols, aligned, limits);
        EXPECT_EQ(p.config, detail::configs::staged_40KB);
        EXPECT_EQ(p.cluster_size, 1);
        EXPECT_EQ(plan_for<T>(direction::forward, most, cols, aligned, limits).config,
                  detail::configs::widest_one_cta);
      }
      check_forward<T>(layouts<T>(most, cols)[0], seed_of(cols, most, 35));
      for (shape s : layouts<T>(most + 1, cols)) {
        check_forward<T>(s, seed_of(cols, s.out_offset, 36));
        check_forward<T>(s, seed_of(cols, s.out_offset, 37), fill::special);
      }
    }
    return;
  }
  // The most rows (100000 columns: 13 CTAs a row), aligned.
  const std::int64_t most = 60 * sms / fp32_ctas(100000);
  if (staged_here) {
    EXPECT_EQ(plan_for<T>(direction::forward, most, 100000, aligned, limits).algo,
              algorithm::staged);
    EXPECT_NE(plan_for<T>(direction::forward, most + 1, 100000, aligned, limits).algo,
              algorithm::staged);
  }
  for (std::int64_t rows : {most, most + 1})
    check_forward<T>(layouts<T>(rows, 100000)[0], seed_of(rows, 100000, 34));
}

// The workspace launchers: rows just above the longest register rows (split, but fp32,
// streamed with one tile read twice) and of 2^20 + 3, several
// rounds of rows in flight (13 rows; forward 2^20 + 3 also 29), every layout; the longest 16-bit
// forward rows the staged split takes (a quarter of the CTAs the device runs) and rows just longer
// (split); rows the register tiers hold are planned and run as without a workspace (the size query
// gives 0).
TYPED_TEST_P(Gpu, SplitRowsWithAWorkspace) {
  using T = TypeParam;
  launcher<T> with_workspace;
  with_workspace.workspace = true;
  const std::int64_t longest = std::int64_t{8192} * 128 / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t cols : {std::int64_t{50257}, longest + 1, (std::int64_t{1} << 20) + 3})
    for (std::int64_t rows : {std::int64_t{1}, std::int64_t{13}})
      for (shape s : layouts<T>(rows, cols)) {
        check_forward<T>(s, seed_of(cols, rows, 17), fill::random, with_workspace);
        check_backward<T>(s, seed_of(cols, rows, 18), fill::random, with_workspace);
      }
  // 29 rows of 2^20 + 3: several rounds of rows in flight where 13 rows take one (fp32
  // forward: 13 groups whose CTAs read up to two tiles twice), aligned and shifted.
  for (int i : {0, 1}) {
    const shape s = layouts<T>(29, (std::int64_t{1} << 20) + 3)[i];
    check_forward<T>(s, seed_of(s.cols, 29, 30), fill::random, with_workspace);
  }
  // 16-bit forward split rows of 2^22 + 3: 4 rows in flight of 66 CTAs on the H200, each CTA
  // holding up to 4 tiles (3 stashed, the last in registers), over 2 rounds.
  if constexpr (sizeof(T) == 2)
    for (int i : {0, 1}) {
      const shape s = layouts<T>(5, (std::int64_t{1} << 22) + 3)[i];
      check_forward<T>(s, seed_of(s.cols, 5, 31), fill::random, with_workspace);
    }
  for (shape s : layouts<T>(4, (std::int64_t{1} << 20) + 3)) {
    check_forward<T>(s, seed_of(s.cols, s.out_offset, 19), fill::special, with_workspace);
    check_backward<T>(s, seed_of(s.cols, s.out_offset, 20), fill::special, with_workspace);
  }
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  const std::int64_t staged_most =
      std::int64_t{limits.sm_count} * 6 / 4 * 32768 / static_cast<std::int64_t>(sizeof(T)) - 5;
  for (std::int64_t cols : {staged_most, staged_most + 6})  // the latter split (sm_90)
    for (shape s : layouts<T>(2, cols))
      check_forward<T>(s, seed_of(s.cols, s.out_offset, 25), fill::random, with_workspace);
  // Backward rows whose CTAs read tiles of their shares twice (16-bit 2^24 + 3 columns, fp32
  // 7 * 2^20 + 3: 3-4 tiles a CTA on the H200, two held and the dy of a third) take the hinted
  // split configuration; aligned and shifted, random and special values.
  for (int i : {0, 1}) {
    const std::int64_t rows = sizeof(T) == 2 ? 3 : 2;
    const shape s = layouts<T>(rows, (std::int64_t{sizeof(T) == 2 ? 16 : 7} << 20) + 3)[i];
    const plan p = plan_for<T>(direction::backward, s.rows, s.cols, layout_for<T>(s), limits, true);
    const std::int64_t q = detail::row_tiles(p) / p.split_ctas;
    if (q > p.stash_tiles + 1) EXPECT_EQ(p.config, detail::configs::split_hinted) << to_string(p);
    check_backward<T>(s, seed_of(s.cols, rows, 32), fill::random, with_workspace);
    check_backward<T>(s, seed_of(s.cols, rows, 33), fill::special, with_workspace);
  }
  // 16-bit forward rows whose split CTAs read tiles of their shares twice take the hinted split
  // configuration (on the H200: 2^23 + 3 columns x 5 rows in 3 groups of 88 CTAs, two of them
  // over two rounds, 4-5 tiles a CTA of which 4 held; 5000003 x 6 in 6 groups of 44); aligned
  // and shifted, random and special values.
  if constexpr (sizeof(T) == 2)
    for (const std::int64_t rows : {5, 6})
      for (int i : {0, 1}) {
        const std::int64_t cols = rows == 5 ? (std::int64_t{1} << 23) + 3 : 5000003;
        const shape s = layouts<T>(rows, cols)[i];
        const plan p =
            plan_for<T>(direction::forward, s.rows, s.cols, layout_for<T>(s), limits, true);
        const std::int64_t q = detail::row_tiles(p) / p.split_ctas;
        if (q > p.stash_tiles + 1)
          EXPECT_EQ(p.config, detail::configs::split_hinted) << to_string(p);
        check_forward<T>(s, seed_of(s.cols, rows, 39), fill::random, with_workspace);
        check_forward<T>(s, seed_of(s.cols, rows, 40), fill::special, with_workspace);
      }
  // The size query: 0 for register rows, the plan's bytes for split and staged split rows
  // (backward split; forward staged split for 16-bit rows on sm_90, else split).
  constexpr std::int64_t n = std::int64_t{1} << 21;  // 2 rows of 2^20
  device_buffer<T> buf(3 * n);
  ASSERT_NE(buf.ptr, nullptr);
  T* const dy = buf.ptr;
  T* const y = buf.ptr + n;
  T* const dx = buf.ptr + 2 * n;
  std::size_t bytes = 1;
  ROWSOFTMAX_CUDA_OK(softmax_backward<T>(nullptr, &bytes, dy, y, dx, 4, 50257));
  EXPECT_EQ(bytes, 0u);
  plan p;
  ROWSOFTMAX_CUDA_OK(
      softmax_backward_plan<T>(dy, 1 << 20, y, 1 << 20, dx, 1 << 20, 2, 1 << 20, &p, true));
  ROWSOFTMAX_CUDA_OK(softmax_backward<T>(nullptr, &bytes, dy, y, dx, 2, 1 << 20));
  EXPECT_EQ(p.algo, algorithm::split) << to_string(p);
  EXPECT_EQ(bytes, static_cast<std::size_t>(p.workspace_bytes));
  // Too small a workspace: refused, nothing launched.
  scratch small(8);
  std::size_t too_few = bytes - 8;
  EXPECT_EQ(softmax_backward<T>(small.ptr, &too_few, dy, y, dx, 2, 1 << 20), cudaErrorInvalidValue);
  ROWSOFTMAX_CUDA_OK(softmax_forward_plan<T>(dy, 1 << 20, dx, 1 << 20, 2, 1 << 20, &p, true));
  ROWSOFTMAX_CUDA_OK(softmax_forward<T>(nullptr, &bytes, dy, dx, 2, 1 << 20));
  EXPECT_EQ(p.algo, limits.compute_capability >= 90 && sizeof(T) == 2 ? algorithm::staged_split
                                                                      : algorithm::split)
      << to_string(p);
  EXPECT_EQ(bytes, static_cast<std::size_t>(p.workspace_bytes));
}

// Forced split plans over rows whose tile count changes from row to row: rows of exactly three
// tiles, which an odd row stride moves by one element a row, so that a row of three tiles
// (head 0) follows and precedes rows of four. One or two rows in flight, several rounds each;
// 1 CTA (a share of 3-4 tiles), 2 (1-2 tiles) or 4 (a CTA with no tile at the rows of three); no
// stash (the second tile read again) or one. Forward stores a row while it loads the next
// (tile_share::pass), so a CTA's share changes within one pass; backward as a reference, also
// with a half tile (dy kept, y read again: the first tile beyond the stash, where the share
// reaches it); backward and 16-bit forward also through the hinted split configuration (a share
// of two tiles and no stash reads one twice, hinted). Forward refuses half tiles, nothing
// launched.
TYPED_TEST_P(Gpu, SplitRowsWhoseSharesChange) {
  using T = TypeParam;
  constexpr int v = static_cast<int>(vec_of<T>());
  auto const& k = detail::kernel_configs[detail::configs::split];
  const std::int64_t tile =
      std::int64_t{k.threads_per_cta} * detail::slots_per_thread(k, v, sizeof(T)) * v;
  const std::int64_t cols = 3 * tile;
  for (shape s : {layouts<T>(2 * v + 1, cols)[0], layouts<T>(2 * v + 1, cols)[1]}) {
    const row_layout layout = layout_for<T>(s);
    const std::int64_t windows = detail::ceil_div(cols + (layout.shifted ? v - 1 : 0), v);
    for (std::int64_t groups : {1, 2})
      for (std::int64_t ctas : {1, 2, 4})
        for (int stash : {0, 1}) {
          plan p = detail::with_groups(
              detail::make_plan(detail::configs::split, layout, s.rows, windows, sizeof(T)), groups,
              ctas);
          p.stash_tiles = stash;
          launcher<T> forced;
          forced.forced = p;
          SCOPED_TRACE(to_string(p) + " " + s.str());
          const std::uint64_t id = static_cast<std::uint64_t>(groups * 8 + ctas);
          check_forward<T>(s, seed_of(id, stash, 28), fill::random, forced);
          if (detail::has_kernel(detail::configs::split_hinted, direction::forward, layout.vec,
                                 sizeof(T))) {  // 16-bit
            forced.forced->config = detail::configs::split_hinted;
            SCOPED_TRACE("hinted");
            check_forward<T>(s, seed_of(id, stash, 46), fill::random, forced);
          }
          for (int halves : {0, 1}) {
            forced.forced->stash_halves = halves;
            forced.forced->config = detail::configs::split;
            SCOPED_TRACE("halves=" + std::to_string(halves));
            check_backward<T>(s, seed_of(id, stash * 2 + halves, 29), fill::random, forced);
            if (layout.vec > 1) {
              forced.forced->config = detail::configs::split_hinted;
              SCOPED_TRACE("hinted");
              check_backward<T>(s, seed_of(id, stash * 2 + halves, 34), fill::random, forced);
            }
          }
          // Half tiles forward: refused, where the same plan without them runs (x and y equally
          // aligned, as the shape's).
          const std::int64_t span = round_up(s.rows * s.ins(), v) + v;
          device_buffer<T> buf(2 * span);
          ASSERT_NE(buf.ptr, nullptr);
          ROWSOFTMAX_CUDA_OK(cudaMemset(buf.ptr, 0, 2 * span * sizeof(T)));
          scratch ws(static_cast<std::size_t>(p.workspace_bytes));
          T* const x = buf.ptr + s.in_offset;
          T* const y = buf.ptr + span + s.in_offset;
          const detail::tensor_arg t[] = {{x, s.ins(), false}, {y, s.ins(), true}};
          auto run_forward = [&](plan const& q) {
            return detail::run<detail::forward_op<T>>(
                q, t, {x, s.ins(), y, s.ins(), s.rows, s.cols}, nullptr, ws.ptr,
                static_cast<std::size_t>(p.workspace_bytes));
          };
          plan h = p;
          ROWSOFTMAX_CUDA_OK(run_forward(h));
          ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
          h.stash_halves = 1;
          EXPECT_EQ(run_forward(h), cudaErrorInvalidValue);
        }
  }
}

// A workspace an earlier call has left stale (every word a tagged partial, counters far past any
// target; see make_stale): the launchers zero it first, so the rows come out as with a fresh one.
// Split and staged split rows, several rounds of rows in flight, both directions.
TYPED_TEST_P(Gpu, StaleWorkspace) {
  using T = TypeParam;
  launcher<T> stale;
  stale.workspace = true;
  stale.stale = true;
  for (std::int64_t cols : {std::int64_t{600001}, (std::int64_t{1} << 20) + 3}) {
    const shape s = layouts<T>(13, cols)[0];
    check_forward<T>(s, seed_of(cols, 13, 26), fill::random, stale);
    check_backward<T>(s, seed_of(cols, 13, 27), fill::random, stale);
  }
}

TYPED_TEST_P(Gpu, PlanQueryMatchesThePlanner) {
  using T = TypeParam;
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  device_buffer<T> buf(1 << 23);
  ASSERT_NE(buf.ptr, nullptr);
  for (std::int64_t cols : {256, 4097, 50257, 131072, 1 << 20}) {
    plan p;
    ROWSOFTMAX_CUDA_OK(
        softmax_forward_plan<T>(buf.ptr, cols, buf.ptr + (1 << 22), cols, 4, cols, &p));
    const plan expected =
        plan_for<T>(direction::forward, 4, cols, layout_for<T>({4, cols}), limits);
    EXPECT_EQ(p.algo, expected.algo) << cols << ": " << to_string(p);
    EXPECT_EQ(p.workspace_in_output, expected.workspace_in_output) << cols;
    EXPECT_EQ(p.grid_ctas, expected.grid_ctas) << cols;
    EXPECT_EQ(p.config, expected.config) << cols << ": " << to_string(p);
    EXPECT_EQ(p.vec, expected.vec);
    EXPECT_EQ(p.cluster_size, expected.cluster_size);
    EXPECT_EQ(p.threads_per_cta, expected.threads_per_cta);
    EXPECT_EQ(p.grid_ctas, expected.grid_ctas);
  }
}

// Small cases covering every tier and path, for compute-sanitizer (memcheck, racecheck,
// synccheck): see the README.
TYPED_TEST_P(Gpu, SanitizerSubset) {
  using T = TypeParam;
  for (std::int64_t cols : {33, 1000, 4097, 16385, 50257, 600000})
    for (shape s : layouts<T>(3, cols)) {
      check_forward<T>(s, seed_of(cols, s.out_offset, 15));
      check_backward<T>(s, seed_of(cols, s.out_offset, 16));
    }
  // Short rows, 8 a thread (one and several threads a row), the last CTA part full; contiguous
  // (misaligned: tiled), also in place.
  for (std::int64_t cols : {std::int64_t{5}, 9 * vec_of<T>()}) {
    std::vector<shape> shapes = layouts<T>(1100, cols);
    for (shape s : contiguous_layouts<T>(1100, cols)) shapes.push_back(s);
    shapes.push_back({1100, cols, cols, cols, 3, 3, true});
    for (shape s : shapes) {
      check_forward<T>(s, seed_of(cols, s.out_offset, 25));
      check_backward<T>(s, seed_of(cols, s.out_offset, 26));
    }
  }
  // Forward rows in launches of more than two 128-thread CTAs an SM for any row beyond one
  // 256-thread CTA (3 such CTAs a row): the staged tier (16-bit; fp32 50257, 7 staged CTAs a row
  // in 623 CTAs) and fp32 register clusters (16385); rows 16 CTAs of 128 bytes a thread do not
  // hold (140000 columns) in wide clusters (fp32; 16-bit: staged).
  device_limits limits;
  ROWSOFTMAX_CUDA_OK(current_device_limits(&limits));
  for (std::int64_t cols : {16385, 50257})
    for (int l = 0; l < 2; ++l) {
      const shape s = layouts<T>(2 * limits.sm_count / 3 + 1, cols)[static_cast<std::size_t>(l)];
      check_forward<T>(s, seed_of(cols, s.rows, 23));
    }
  // Clusters of 288 bytes a thread (fp32 forward, 140000: 8 CTAs) and of 144 (backward rows 16
  // CTAs of 128 bytes do not hold: fp32 140000, 16 CTAs; 16-bit 270000, 15).
  for (shape s : layouts<T>(3, 140000)) {
    check_forward<T>(s, seed_of(s.cols, s.out_offset, 24));
    check_backward<T>(s, seed_of(s.cols, s.out_offset, 29));
  }
  // 16-bit: staged CTAs of 40 and 48 KB (forward 300000 and 380000 columns).
  if (sizeof(T) == 2)
    for (std::int64_t cols : {270000, 300000, 380000})
      for (shape s : layouts<T>(3, cols)) {
        if (cols == 270000) check_backward<T>(s, seed_of(s.cols, s.out_offset, 30));
        if (cols != 270000) check_forward<T>(s, seed_of(s.cols, s.out_offset, 36));
      }
  // 16-bit: one staged CTA of 40 KB a row (planned in launches of more than 24 rows an SM, here
  // forced), aligned, misaligned, and misaligned to the end of its allocations.
  if (sizeof(T) == 2) {
    std::vector<shape> shapes = layouts<T>(3, 16385);
    shapes.pop_back();  // the scalar fallback: not staged
    shapes.push_back({3, 16385, 16385, 16385, 1, 1, false, 0});
    for (shape s : shapes) {
      const row_layout layout = layout_for<T>(s);
      launcher<T> staged;
      staged.forced = detail::make_plan(
          detail::configs::staged_40KB, layout, s.rows,
          detail::row_windows(detail::kernel_configs[detail::configs::staged_40KB], layout, s.cols),
          sizeof(T), 1);
      check_forward<T>(s, seed_of(s.cols, s.out_offset, 38), fill::random, staged);
    }
  }
  // Tensors that end where their allocations do, rows misaligned (offset 1), so that memcheck
  // sees any read past a tensor's last element (the other shapes leave 64 elements of poison
  // after it); rows of 2 columns 3 apart as well, a row's 16-byte vector reaching past the next.
  for (std::int64_t cols : {2, 5, 33, 2049, 4097, 16385, 50257})
    for (std::int64_t stride : {cols, cols + 1})
      for (bool in_place : {false, true}) {
        const shape s{5, cols, stride, stride, 1, 1, in_place, 0};
        check_forward<T>(s, seed_of(cols, stride + in_place, 27));
        check_backward<T>(s, seed_of(cols, stride + in_place, 28));
      }
  launcher<T> with_workspace;  // the split tier backward, the staged split tier forward
  with_workspace.workspace = true;
  for (shape s : layouts<T>(3, 600000)) {
    check_forward<T>(s, seed_of(s.cols, s.out_offset, 21), fill::random, with_workspace);
    check_backward<T>(s, seed_of(s.cols, s.out_offset, 22), fill::random, with_workspace);
  }
}

REGISTER_TYPED_TEST_SUITE_P(Gpu, GraphCapture, ShapeTable, TierThresholds, StridesOffsetsAndInPlace,
                            SpecialValues, RandomShapes, EveryConfigurationThatHoldsTheRow,
                            LongRowsStream, SplitRowsWithTheWorkspaceInTheOutput,
                            FullLaunchesOfClusterRows, ClustersOfMoreBytesAThread,
                            StagedRowsOfMidLaunches, SplitRowsWithAWorkspace,
                            SplitRowsWhoseSharesChange, StaleWorkspace, PlanQueryMatchesThePlanner,
                            SanitizerSubset, ShortRowsSeveralAThread);

}  // namespace rowsoftmax::test
