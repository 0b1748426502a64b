// SPDX-License-Identifier: Apache-2.0
// Host-only: the kernel configurations the dispatcher can launch, defined by name and grouped by
// tier, each with the directions and element types it has a kernel for; and what a
// configuration's CTAs take of an SM (registers, shared memory), which the kernels' launch
// bounds and the planner both read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../plan_types.hpp"

namespace rowsoftmax::detail {

/// The directions and element types a configuration has a vectorised kernel for (bit set). The
/// scalar fallback (vec == 1) has one for every direction and type where scalar_ok.
enum kernels_for : std::uint8_t {
  forward_fp32 = 1,
  forward_16bit = 2,
  backward_fp32 = 4,
  backward_16bit = 8,
  forward_any = forward_fp32 | forward_16bit,
  backward_any = backward_fp32 | backward_16bit,
  fp32_any = forward_fp32 | backward_fp32,
  any_kernel = forward_any | backward_any,
};

/// One kernel instantiation the dispatcher can launch. Each thread holds `bytes` bytes of a row
/// per tensor and pass in 16-byte vectors (32 fp32 or 64 bf16/fp16 elements for 128 bytes); the
/// scalar fallback holds one element per 32-bit register, bytes / 4 elements of any type.
struct kernel_config {
  algorithm algo;
  int threads_per_row;
  int bytes;
  int threads_per_cta;
  bool clustered;  ///< CTAs form clusters (sm_90+) of 2..max_cluster_size, chosen per call
  bool scalar_ok;  ///< also instantiated with vec == 1 (misaligned fallback)
  /// Rows a thread holds, its `bytes` shared among them: several for short rows, whose threads
  /// of a row hold one vector of it each.
  int rows_per_thread = 1;
  /// Short contiguous rows (row_layout::contiguous): a CTA's rows, one span of each tensor,
  /// copied into shared memory in 16-byte vectors, held from there as in registers otherwise,
  /// normalized in place and copied out.
  bool tiled = false;
  /// Split CTAs that read tiles of their share twice give their accesses L2 hints
  /// (hints_second_reads). Not scalar.
  bool l2_hints = false;
  /// The directions and types it has a vectorised kernel for: exactly those the planner may
  /// choose it for (has_kernel), so that no caller compiles a kernel nobody launches.
  std::uint8_t kernels = any_kernel;
};

inline constexpr int max_cluster_size = 16;  // non-portable beyond 8
/// The compute capability from which thread-block clusters, and so the cluster and staged tiers
/// (bulk copies, distributed shared memory), exist.
inline constexpr int cluster_compute_capability = 90;

/// One CTA a row of `threads_per_row` threads, `bytes` a thread, in CTAs of 128 threads for
/// sub-warp rows and 256 otherwise. Rows take the smallest configuration that holds them, so
/// besides 128 bytes there are 80, 96, 112 and 144 (5-9 vectors) for 4 threads a row and more:
/// a row leaves at most a fifth of its slots idle, and an idle slot costs its exps like a full
/// one (tuning log, one-CTA register rows). The kernels planned for each type:
/// - fp32: 128 bytes from 4 threads a row (fewer: short rows hold those rows), 80 and 144 from
///   32 threads (96 and 112 bytes, and 80 and 144 bytes at fewer threads, ran slower than 128
///   bytes with idle slots);
/// - 16-bit: every one, but backward 144 bytes at 32 threads a row or fewer, whose kernels run
///   unbounded at 185-187 registers and lose to 80 bytes in more threads.
constexpr kernel_config one_cta(int threads_per_row, int bytes) {
  const bool fp32 =
      bytes == 128 ? threads_per_row >= 4 : threads_per_row >= 32 && (bytes == 80 || bytes == 144);
  const bool backward_16 = !(bytes == 144 && threads_per_row <= 32);
  const std::uint8_t kernels = static_cast<std::uint8_t>((fp32 ? fp32_any : 0) | forward_16bit |
                                                         (backward_16 ? backward_16bit : 0));
  return {algorithm::registers,
          threads_per_row,
          bytes,
          threads_per_row >= 32 ? 256 : 128,
          false,
          bytes == 128,
          1,
          false,
          false,
          kernels};
}

/// Short rows (at most 16 vectors): one vector a thread, 8 rows a thread, as many threads as the
/// row has vectors (a power of two), so a warp's load covers 512 contiguous bytes of consecutive
/// rows and a thread has 8 loads in flight (tuning log, short rows).
constexpr kernel_config short_rows(int threads_per_row) {
  return {algorithm::registers, threads_per_row, 128, 128, false, false, 8};
}

/// Short rows that are misaligned and contiguous, tiled: a CTA's rows copied through shared
/// memory in 16-byte vectors whatever their alignment. Forward up to 8 threads a row, 16-bit
/// backward up to 4 (fp32 backward and 16-bit backward at 8 threads ran as fast untiled; tuning
/// log, short rows).
constexpr kernel_config tiled_short_rows(int threads_per_row) {
  const std::uint8_t kernels = threads_per_row <= 4 ? forward_any | backward_16bit : forward_any;
  return {algorithm::registers, threads_per_row, 128, 128, false, false, 8, true, false, kernels};
}

/// A register cluster: `threads_per_cta` threads a row in each of 2..16 CTAs, `bytes` a thread.
constexpr kernel_config register_cluster(int threads_per_cta, int bytes, std::uint8_t kernels) {
  return {algorithm::cluster,
          threads_per_cta,
          bytes,
          threads_per_cta,
          true,
          false,
          1,
          false,
          false,
          kernels};
}

/// A staged cluster (forward): each CTA copies its share of the row into `bytes` a thread of
/// shared memory.
constexpr kernel_config staged_cluster(int bytes, std::uint8_t kernels) {
  return {algorithm::staged, 256, bytes, 256, true, false, 1, false, false, kernels};
}

/// One CTA of 512 threads a row: twice one CTA's share, where clusters are unavailable.
constexpr kernel_config one_cta_512_threads() {
  return {algorithm::registers, 512, 128, 512, false, false};
}

/// Streaming: one CTA, or a cluster, passes over the row in tiles twice.
constexpr kernel_config streaming_rows(bool clustered) {
  return {algorithm::streaming, 256, 128, 256, clustered, true};
}

/// Split rows through a workspace, without or with L2 hints on the tiles read twice (a
/// configuration of its own, so that the split kernels without hints keep their code; the fp32
/// forward split kernels take hints without it: hints_second_reads).
constexpr kernel_config split_rows(bool l2_hints) {
  return l2_hints ? kernel_config{algorithm::split,
                                  256,
                                  128,
                                  256,
                                  false,
                                  false,
                                  1,
                                  false,
                                  true,
                                  backward_any | forward_16bit}
                  : kernel_config{algorithm::split, 256, 128, 256, false, true};
}

/// Staged split (16-bit forward): split CTAs that copy their share into shared memory.
constexpr kernel_config staged_split_rows() {
  return {algorithm::staged_split, 256, 128, 256, false, false, 1, false, false, forward_16bit};
}

/// Every configuration, grouped by tier. The dispatcher's switch instantiates each for the
/// directions and types it has kernels for; the names below (configs::) find them.
inline constexpr kernel_config kernel_configs[] = {
    // Short rows, then short rows tiled.
    short_rows(1),
    short_rows(2),
    short_rows(4),
    short_rows(8),
    short_rows(16),
    tiled_short_rows(1),
    tiled_short_rows(2),
    tiled_short_rows(4),
    tiled_short_rows(8),
    // One CTA a row, smallest first (the planner takes the first that holds the row).
    one_cta(1, 128),
    one_cta(2, 128),
    one_cta(4, 80),
    one_cta(4, 96),
    one_cta(4, 112),
    one_cta(4, 128),
    one_cta(4, 144),
    one_cta(8, 80),
    one_cta(8, 96),
    one_cta(8, 112),
    one_cta(8, 128),
    one_cta(8, 144),
    one_cta(16, 80),
    one_cta(16, 96),
    one_cta(16, 112),
    one_cta(16, 128),
    one_cta(16, 144),
    one_cta(32, 80),
    one_cta(32, 96),
    one_cta(32, 112),
    one_cta(32, 128),
    one_cta(32, 144),
    one_cta(64, 80),
    one_cta(64, 96),
    one_cta(64, 112),
    one_cta(64, 128),
    one_cta(64, 144),
    one_cta(128, 80),
    one_cta(128, 96),
    one_cta(128, 112),
    one_cta(128, 128),
    one_cta(128, 144),
    one_cta(256, 80),
    one_cta(256, 96),
    one_cta(256, 112),
    one_cta(256, 128),
    one_cta(256, 144),
    one_cta_512_threads(),
    // Register clusters. 128-thread CTAs for finer shares and few forward rows; 256 threads of
    // 128 bytes for the rest but 16-bit forward (staged CTAs hold those rows); 256 and 288
    // bytes for fp32 forward rows those do not hold or in fuller launches; 144 bytes for
    // backward rows 128 bytes do not hold.
    register_cluster(128, 128, any_kernel),
    register_cluster(256, 128, forward_fp32 | backward_any),
    register_cluster(256, 144, backward_any),
    register_cluster(256, 256, forward_fp32),
    register_cluster(256, 288, forward_fp32),
    // Staged clusters (forward): CTAs of 32, 40, 48 and 64 KB of shared memory; fp32 rows only
    // in those of 32 KB.
    staged_cluster(128, forward_any),
    staged_cluster(160, forward_16bit),
    staged_cluster(192, forward_16bit),
    staged_cluster(256, forward_16bit),
    streaming_rows(false),
    streaming_rows(true),
    split_rows(false),
    split_rows(true),
    staged_split_rows(),
};
inline constexpr int num_kernel_configs =
    static_cast<int>(sizeof(kernel_configs) / sizeof(kernel_configs[0]));

constexpr bool same_config(kernel_config const& a, kernel_config const& b) noexcept {
  return a.algo == b.algo && a.threads_per_row == b.threads_per_row && a.bytes == b.bytes &&
         a.threads_per_cta == b.threads_per_cta && a.clustered == b.clustered &&
         a.rows_per_thread == b.rows_per_thread && a.tiled == b.tiled && a.l2_hints == b.l2_hints;
}

/// The index of configuration `c` in kernel_configs; -1 where it has none.
constexpr int index_of(kernel_config const& c) noexcept {
  for (int i = 0; i < num_kernel_configs; ++i)
    if (same_config(kernel_configs[i], c)) return i;
  return -1;
}

/// The configurations by name: the planner, the tests and the benchmark refer to them so.
namespace configs {
inline constexpr int first_short_rows = index_of(short_rows(1));
inline constexpr int last_short_rows = index_of(short_rows(16));
inline constexpr int first_tiled = index_of(tiled_short_rows(1));
inline constexpr int last_tiled = index_of(tiled_short_rows(8));
inline constexpr int first_one_cta = index_of(one_cta(1, 128));
inline constexpr int widest_one_cta = index_of(one_cta(256, 144));
inline constexpr int one_cta_512 = index_of(one_cta_512_threads());
inline constexpr int cluster_128t = index_of(register_cluster(128, 128, 0));
inline constexpr int cluster_256t = index_of(register_cluster(256, 128, 0));
inline constexpr int cluster_256t_144B = index_of(register_cluster(256, 144, 0));
inline constexpr int cluster_256t_256B = index_of(register_cluster(256, 256, 0));
inline constexpr int cluster_256t_288B = index_of(register_cluster(256, 288, 0));
inline constexpr int staged_32KB = index_of(staged_cluster(128, 0));
inline constexpr int staged_40KB = index_of(staged_cluster(160, 0));
inline constexpr int staged_48KB = index_of(staged_cluster(192, 0));
inline constexpr int staged_64KB = index_of(staged_cluster(256, 0));
inline constexpr int streaming_one_cta = index_of(streaming_rows(false));
inline constexpr int streaming_cluster = index_of(streaming_rows(true));
inline constexpr int split = index_of(split_rows(false));
inline constexpr int split_hinted = index_of(split_rows(true));
inline constexpr int staged_split = index_of(staged_split_rows());

/// The one-CTA configuration of `threads_per_row` threads and `bytes` a thread; -1 if none.
constexpr int one_cta_of(int threads_per_row, int bytes) noexcept {
  return index_of(one_cta(threads_per_row, bytes));
}
/// Whether `config` is a one-CTA configuration (first_one_cta to widest_one_cta).
constexpr bool is_one_cta(int config) noexcept {
  return config >= first_one_cta && config <= widest_one_cta;
}
}  // namespace configs

static_assert(configs::first_one_cta >= 0 && configs::widest_one_cta > configs::first_one_cta &&
                  configs::one_cta_512 >= 0 && configs::cluster_128t >= 0 &&
                  configs::cluster_256t >= 0 && configs::cluster_256t_144B >= 0 &&
                  configs::cluster_256t_256B >= 0 && configs::cluster_256t_288B >= 0 &&
                  configs::staged_32KB >= 0 && configs::staged_40KB >= 0 &&
                  configs::staged_48KB >= 0 && configs::staged_64KB >= 0 &&
                  configs::streaming_one_cta >= 0 && configs::streaming_cluster >= 0 &&
                  configs::split >= 0 && configs::split_hinted >= 0 && configs::staged_split >= 0 &&
                  configs::last_short_rows >= 0 && configs::last_tiled >= 0,
              "every named configuration is in the table");
static_assert(kernel_configs[configs::split_hinted].threads_per_row ==
                      kernel_configs[configs::split].threads_per_row &&
                  kernel_configs[configs::split_hinted].bytes ==
                      kernel_configs[configs::split].bytes &&
                  kernel_configs[configs::split_hinted].threads_per_cta ==
                      kernel_configs[configs::split].threads_per_cta,
              "the hinted split configuration is the split one but for its hints");

ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return (a + b - 1) / b;
}

/// Vector windows of a row of `cols` elements in configuration `c` at `layout`: the row plus,
/// for misaligned rows, the worst head (vec - 1 elements), which tiled rows do not peel (their
/// windows start at each row's start in the tile).
constexpr std::int64_t row_windows(kernel_config const& c, row_layout layout,
                                   std::int64_t cols) noexcept {
  return ceil_div(cols + (layout.vec > 1 && layout.shifted && !c.tiled ? layout.vec - 1 : 0),
                  layout.vec);
}

/// Vector slots per thread and row for a configuration at vector width `vec` (elements of
/// `elem_size` bytes): the configuration's bytes in 16-byte vectors, or in 32-bit registers of
/// one element each for the scalar fallback, over the rows a thread holds.
constexpr int slots_per_thread(kernel_config const& c, int vec, std::size_t elem_size) noexcept {
  return (vec > 1 ? c.bytes / (vec * static_cast<int>(elem_size)) : c.bytes / 4) /
         c.rows_per_thread;
}

/// Vector windows of a row that a configuration holds in one pass: all its threads of a row,
/// times `cluster` CTAs where it forms clusters.
constexpr std::int64_t window_capacity(kernel_config const& c, int vec, std::size_t elem_size,
                                       int cluster = max_cluster_size) noexcept {
  return std::int64_t{c.threads_per_row} * slots_per_thread(c, vec, elem_size) *
         (c.clustered ? cluster : 1);
}

/// Whether configuration `config` has a kernel for `dir` at vector width `vec` (16 / elem_size,
/// or 1: the scalar fallback) and `elem_size`-byte elements: its record's `kernels` (vectorised)
/// or `scalar_ok` (scalar). The launchers compile a kernel for each of those and no other, the
/// planner chooses no other (make_plan refuses them), and the dispatcher refuses the others.
constexpr bool has_kernel(int config, direction dir, int vec, std::size_t elem_size) noexcept {
  if (config < 0 || config >= num_kernel_configs) return false;
  kernel_config const& c = kernel_configs[config];
  if (vec == 1) return c.scalar_ok;
  const bool forward = dir == direction::forward, fp32 = elem_size == 4;
  const int bit =
      forward ? (fp32 ? forward_fp32 : forward_16bit) : (fp32 ? backward_fp32 : backward_16bit);
  return (c.kernels & bit) != 0;
}

/// Input tensors a direction holds per element: x (forward), dy and y (backward).
constexpr int tensors_of(direction dir) noexcept {
  return dir == direction::forward ? 1 : 2;
}

/// Shared memory a CTA needs besides its row data or stash: 1 KB reserved by the system and the
/// kernel's static shared memory (the exchange, the staged kernels' mbarriers: up to 1056 bytes
/// on sm_90, ptxas), rounded up to the 128-byte unit the SM allocates in.
inline constexpr int cta_smem_reserve = 2176;

/// Registers of an SM, which the kernels' register bounds share out.
inline constexpr int sm_registers = 65536;
/// Registers a thread needs besides the row data it holds (addresses, loop state, the exchange).
inline constexpr int register_slack = 48;
/// The slack of 16-bit forward CTAs of 80 bytes a thread: four 256-thread CTAs an SM at 64
/// registers, without spills (ptxas, sm_90), for the bytes in flight (tuning log, one-CTA
/// register rows).
inline constexpr int register_slack_16bit_forward_80B = 44;

/// Whether a configuration's CTAs hold their row data in shared memory (staged, staged split).
ROWSOFTMAX_HOST_DEVICE constexpr bool stages(kernel_config const& c) noexcept {
  return c.algo == algorithm::staged || c.algo == algorithm::staged_split;
}

/// Whether a configuration's CTAs meet through a workspace (split, staged split).
ROWSOFTMAX_HOST_DEVICE constexpr bool splits(kernel_config const& c) noexcept {
  return c.algo == algorithm::split || c.algo == algorithm::staged_split;
}

/// Shared memory a staged CTA copies its share of the row into: its threads' bytes.
ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t staging_bytes(kernel_config const& c) noexcept {
  return std::int64_t{c.bytes} * c.threads_per_cta;
}

/// Whether a streaming or split CTA of configuration `c` keeps the last tile of its share in
/// registers between the passes: all but 16-bit forward streaming, whose fold takes the
/// registers (keeping it there spilled). The 16-bit forward split CTA keeps it at two CTAs an
/// SM (ctas_per_sm), which ran faster than three CTAs an SM without it (tuning log, split rows).
ROWSOFTMAX_HOST_DEVICE constexpr bool keeps_last_tile(kernel_config const& c, int tensors,
                                                      std::size_t elem_size) noexcept {
  return tensors == 2 || elem_size == 4 || c.algo == algorithm::split;
}

/// CTAs of a configuration an SM runs at once for rows of `tensors` input tensors of
/// `elem_size`-byte elements, as its kernels' register bound sets them: the row data a thread
/// holds plus register_slack. Row data counts twice for 16-bit forward CTAs that keep a tile in
/// registers (keeps_last_tile: the kept tile beside the one they load; at three CTAs an SM they
/// spilled) and for threads of several short rows (each row's addresses and head beside its
/// data). Staged CTAs hold their row data in shared memory instead: as many as an SM's shared
/// memory holds (device_limits' default, that of Hopper), and a register bound to match.
/// `floats_kept`: 16-bit elements held as floats (an op's `floats_kept`, see
/// float_exps_forward_op), twice their packed registers, with the plain slack.
constexpr int ctas_per_sm(kernel_config const& c, int tensors, std::size_t elem_size,
                          bool floats_kept = false) noexcept {
  if (stages(c))
    return static_cast<int>(device_limits{}.shared_bytes_per_sm /
                            (staging_bytes(c) + cta_smem_reserve));
  const bool packed_tile = tensors == 1 && elem_size == 2 && keeps_last_tile(c, tensors, elem_size);
  const int data =
      c.bytes / 4 * (packed_tile || floats_kept || c.rows_per_thread > 1 ? 2 : 1) * tensors;
  const int slack = tensors == 1 && elem_size == 2 && c.bytes == 80 && !floats_kept
                        ? register_slack_16bit_forward_80B
                        : register_slack;
  const int bound = sm_registers / (c.threads_per_cta * (data + slack));
  return bound > 1 ? bound : 1;
}

/// Shared memory one tile of a streaming or split CTA takes in its stash: the thread's fragment
/// (the row data of every input tensor plus at most 16 bytes, the kernels check) for every
/// thread.
ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t stash_tile_bytes(kernel_config const& c,
                                                               int tensors) noexcept {
  return std::int64_t{c.bytes * tensors + 16} * c.threads_per_cta;
}

/// Shared memory one half tile of a backward streaming or split CTA takes in its stash
/// (plan::stash_halves): dy's part of every thread's fragment.
ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t stash_half_bytes(kernel_config const& c) noexcept {
  return std::int64_t{c.bytes} * c.threads_per_cta;
}

/// Whether a CTA of the split configuration `c` that reads tiles of its share twice gives its
/// accesses L2 hints, so that L2 keeps those tiles for their second read: in the hinted
/// configuration, and in any split configuration fp32 forward rows (unhinted they ran up to 6
/// points slower; tuning log, L2 hints) and the scalar fp32 backward fallback.
ROWSOFTMAX_HOST_DEVICE constexpr bool hints_second_reads(kernel_config const& c, direction dir,
                                                         std::size_t elem_size, int vec) noexcept {
  return c.l2_hints || (elem_size == 4 && (dir == direction::forward || vec == 1));
}

}  // namespace rowsoftmax::detail
