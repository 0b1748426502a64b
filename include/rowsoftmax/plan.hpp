// SPDX-License-Identifier: Apache-2.0
// Host-only: how a softmax call is mapped onto the GPU. Everything here is plain data and
// constexpr functions, so it is unit-tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define ROWSOFTMAX_HOST_DEVICE __host__ __device__
#else
#define ROWSOFTMAX_HOST_DEVICE
#endif

namespace rowsoftmax {

/// Which softmax pass a plan is for. Backward holds two input tensors per element (dy and y),
/// so its register budget per element differs from forward's.
enum class direction : std::uint8_t { forward, backward };

/// How a row is spread over the GPU.
enum class algorithm : std::uint8_t {
  registers,  ///< one CTA holds one or more whole rows in registers; x is read once
  cluster,    ///< a thread-block cluster (sm_90+) holds one row in registers; x is read once
  streaming,  ///< a CTA or cluster streams the row twice (stats, then normalize); x is read twice
};

/// What the planner needs to know about the device. `query_device_limits` (softmax.cuh) fills
/// it for a real device; tests build it by hand to plan for devices they do not have.
struct device_limits {
  int sm_count = 132;           ///< streaming multiprocessors
  int compute_capability = 90;  ///< major * 10 + minor
  int max_cluster_size = 16;    ///< largest cluster the launcher may use; 1 disables clusters
};

/// Vector access shared by every tensor of one call, derived from pointers and row strides.
struct row_layout {
  int vec = 1;           ///< elements per vector access: 16 / sizeof(T), or 1 as the fallback
  bool shifted = false;  ///< row starts are not vec-aligned (but equally misaligned in every
                         ///< tensor): each row peels a head up to the next 16-byte boundary
};

/// The launch configuration chosen for one call. Inspect it with `plan_for` or
/// `softmax_forward_plan` / `softmax_backward_plan`; it is plain data.
struct plan {
  algorithm algo = algorithm::registers;
  int config = 0;           ///< index into detail::kernel_configs (the dispatch switch's key)
  int vec = 1;              ///< elements per vector access
  bool shifted = false;     ///< rows peel a misaligned head
  int threads_per_row = 1;  ///< threads of one CTA that share a row
  int vecs_per_thread = 1;  ///< vector slots each thread holds per pass
  int rows_per_cta = 1;     ///< rows one CTA (or one cluster) handles
  int threads_per_cta = 1;
  int cluster_size = 1;        ///< CTAs that share one row (1: no cluster)
  std::int64_t windows = 0;    ///< vector windows in the widest row, peeled head included
  std::int64_t grid_ctas = 0;  ///< CTAs launched for `rows` rows
};

namespace detail {

/// One kernel instantiation the dispatcher can launch. Each thread holds `bytes` bytes of a row
/// per tensor and pass in 16-byte vectors (32 fp32 or 64 bf16/fp16 elements for 128 bytes); the
/// scalar fallback holds one element per 32-bit register, bytes / 4 elements of any type.
struct kernel_config {
  algorithm algo;
  int threads_per_row;
  int bytes;
  int threads_per_cta;
  int cluster_size;
  bool scalar_ok;  ///< also instantiated with vec == 1 (misaligned fallback)
};

// 128 bytes a thread: the bytes in flight per SM, not the element count, set the speed of a
// load-reduce-store kernel. Measured on the H200: 16-bit rows held as 32 elements a thread (64
// bytes, the same 32 registers of converted floats as fp32) ran at 55-65% of copy from 2K
// columns on, fp32 at 98%; holding 16-bit elements packed (64 a thread in 32 registers) moves as
// many bytes as fp32 (README, "Tuning notes"). Sub-warp rows share 128-thread CTAs; whole-warp
// and longer rows use 256-thread CTAs, and clusters of them beyond one CTA. A 512-thread CTA
// holds twice one CTA's share where clusters are unavailable; a cluster of 16 CTAs with 256
// bytes a thread holds the longest register rows. Streaming tiles are 256 threads x 128 bytes.
inline constexpr kernel_config kernel_configs[] = {
    {algorithm::registers, 1, 128, 128, 1, true},     // 0
    {algorithm::registers, 2, 128, 128, 1, true},     // 1
    {algorithm::registers, 4, 128, 128, 1, true},     // 2
    {algorithm::registers, 8, 128, 128, 1, true},     // 3
    {algorithm::registers, 16, 128, 128, 1, true},    // 4
    {algorithm::registers, 32, 128, 256, 1, true},    // 5
    {algorithm::registers, 64, 128, 256, 1, true},    // 6
    {algorithm::registers, 128, 128, 256, 1, true},   // 7
    {algorithm::registers, 256, 128, 256, 1, true},   // 8
    {algorithm::registers, 512, 128, 512, 1, false},  // 9
    {algorithm::cluster, 256, 128, 256, 2, false},    // 10
    {algorithm::cluster, 256, 128, 256, 4, false},    // 11
    {algorithm::cluster, 256, 128, 256, 8, false},    // 12
    {algorithm::cluster, 256, 128, 256, 16, false},   // 13
    {algorithm::cluster, 256, 256, 256, 16, false},   // 14
    {algorithm::streaming, 256, 128, 256, 1, true},   // 15
    {algorithm::streaming, 256, 128, 256, 8, true},   // 16
    {algorithm::streaming, 256, 128, 256, 16, true},  // 17
};
inline constexpr int num_kernel_configs =
    static_cast<int>(sizeof(kernel_configs) / sizeof(kernel_configs[0]));

inline constexpr int last_cta_config = 8;  // largest register tier of 256-thread CTAs
inline constexpr int wide_cta_config = 9;  // one 512-thread CTA, used without clusters
inline constexpr int first_cluster_config = 10;
inline constexpr int first_streaming_config = 15;

ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return (a + b - 1) / b;
}

/// Vector slots per thread for a configuration at vector width `vec` (elements of
/// `elem_size` bytes): the configuration's bytes in 16-byte vectors, or in 32-bit registers of
/// one element each for the scalar fallback.
constexpr int slots_per_thread(kernel_config const& c, int vec, std::size_t elem_size) noexcept {
  return vec > 1 ? c.bytes / (vec * static_cast<int>(elem_size)) : c.bytes / 4;
}

/// Vector windows of a row that a configuration holds in one pass (all CTAs of a cluster).
constexpr std::int64_t window_capacity(kernel_config const& c, int vec,
                                       std::size_t elem_size) noexcept {
  return std::int64_t{c.threads_per_row} * slots_per_thread(c, vec, elem_size) * c.cluster_size;
}

constexpr plan make_plan(int config, row_layout layout, std::int64_t rows, std::int64_t windows,
                         std::size_t elem_size) noexcept {
  kernel_config const& c = kernel_configs[config];
  plan p{};
  p.algo = c.algo;
  p.config = config;
  p.vec = layout.vec;
  p.shifted = layout.shifted;
  p.threads_per_row = c.threads_per_row;
  p.vecs_per_thread = slots_per_thread(c, layout.vec, elem_size);
  p.rows_per_cta = c.threads_per_cta / c.threads_per_row;
  p.threads_per_cta = c.threads_per_cta;
  p.cluster_size = c.cluster_size;
  p.windows = windows;
  p.grid_ctas = c.cluster_size > 1 || c.algo == algorithm::streaming
                    ? rows * c.cluster_size
                    : ceil_div(rows, p.rows_per_cta);
  return p;
}

}  // namespace detail

/// The plan the launchers use for `rows` rows of `cols` elements of `elem_size` bytes.
///
/// Pure and constexpr: depends only on its arguments. Rows that fit one 256-thread CTA's
/// registers (32 KB a tensor: 8K fp32 or 16K bf16/fp16 elements) use the smallest register
/// configuration that holds them; longer rows the smallest cluster (2..16 CTAs, up to
/// `limits.max_cluster_size`) that holds them in registers, or, without clusters, one
/// 512-thread CTA of twice that; longer rows stream through a cluster (or one CTA) twice. The
/// scalar fallback (`layout.vec == 1`, 32 elements a thread of any type) has register
/// configurations up to 256 threads per row and streams beyond.
/// @pre rows >= 1, cols >= 1, elem_size in {2, 4}, layout.vec in {1, 16 / elem_size}.
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, std::size_t elem_size,
                        row_layout layout, device_limits const& limits) noexcept {
  (void)dir;  // forward and backward share thresholds (both hold 128 bytes a tensor a thread)
  using namespace detail;
  const int vec = layout.vec;
  const std::int64_t head = layout.shifted ? vec - 1 : 0;
  const std::int64_t windows = ceil_div(cols + head, vec);
  auto fits = [&](int config) {
    return windows <= window_capacity(kernel_configs[config], vec, elem_size);
  };

  const int max_cluster = limits.compute_capability >= 90 ? limits.max_cluster_size : 1;
  for (int i = 0; i <= last_cta_config; ++i)
    if ((vec > 1 || kernel_configs[i].scalar_ok) && fits(i))
      return make_plan(i, layout, rows, windows, elem_size);
  if (vec > 1) {
    if (max_cluster < 2 && fits(wide_cta_config))
      return make_plan(wide_cta_config, layout, rows, windows, elem_size);
    for (int i = first_cluster_config; i < first_streaming_config; ++i)
      if (kernel_configs[i].cluster_size <= max_cluster && fits(i))
        return make_plan(i, layout, rows, windows, elem_size);
  }
  // Streaming: a cluster as large as allowed, but none larger than the row has tiles for.
  const std::int64_t tiles =
      ceil_div(windows, window_capacity(kernel_configs[first_streaming_config], vec, elem_size));
  int config = first_streaming_config;
  for (int i = first_streaming_config + 1; i < num_kernel_configs; ++i)
    if (kernel_configs[i].cluster_size <= max_cluster && kernel_configs[i - 1].cluster_size < tiles)
      config = i;
  return make_plan(config, layout, rows, windows, elem_size);
}

/// `plan_for` with the element size taken from `T` (float, __half or __nv_bfloat16).
template <class T>
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, row_layout layout,
                        device_limits const& limits) noexcept {
  return plan_for(dir, rows, cols, sizeof(T), layout, limits);
}

/// A one-line description of a plan, e.g. "cluster x16 cta=256 tpr=256 vec=8x8".
inline std::string to_string(plan const& p) {
  const char* algo = p.algo == algorithm::registers ? "registers"
                     : p.algo == algorithm::cluster ? "cluster"
                                                    : "streaming";
  std::string s = algo;
  if (p.cluster_size > 1) s += " x" + std::to_string(p.cluster_size);
  s += " cta=" + std::to_string(p.threads_per_cta) + " tpr=" + std::to_string(p.threads_per_row) +
       " vec=" + std::to_string(p.vec) + "x" + std::to_string(p.vecs_per_thread);
  if (p.shifted) s += " head";
  return s;
}

}  // namespace rowsoftmax
