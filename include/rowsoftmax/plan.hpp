// SPDX-License-Identifier: Apache-2.0
// Host-only: how a softmax call is mapped onto the GPU. Everything here is plain data and
// constexpr functions, so it is unit-tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

/// Marks the planner's functions that kernels call too: `__host__ __device__` under nvcc, nothing
/// in a host compiler (where this header is plain C++).
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
  registers,     ///< one CTA holds one or more whole rows in registers; x is read once
  cluster,       ///< a thread-block cluster (sm_90+) holds one row in registers; x is read once
  streaming,     ///< a CTA or cluster passes over the row in tiles twice (stats, then normalize),
                 ///< each CTA keeping its last tile in registers and up to `stash_tiles` more in
                 ///< shared memory; x is read once where the CTAs hold the row, else the overflow
                 ///< twice
  split,         ///< many CTAs share a row through a workspace, each keeping its share on chip
                 ///< (registers and shared memory) where the CTAs the device runs at once hold
                 ///< it; x is read once, or the overflow twice (launchers given a workspace,
                 ///< or without one out of place: plan::workspace_in_output)
  staged,        ///< forward only: a thread-block cluster (sm_90+) copies one row into its CTAs'
                 ///< shared memory (bulk asynchronous copies) and reduces and normalizes it from
                 ///< there, its registers free of row data; x is read once
  staged_split,  ///< forward only (sm_90+): many CTAs share a row through a workspace, as
                 ///< split, each copying its share into shared memory, as staged; x is read
                 ///< once (launchers given a workspace, or out of place without one; the
                 ///< planner's choice for 16-bit rows)
};

/// What the planner needs to know about the device. `query_device_limits` (softmax.cuh) fills
/// it for a real device; tests build it by hand to plan for devices they do not have.
struct device_limits {
  int sm_count = 132;                 ///< streaming multiprocessors
  int compute_capability = 90;        ///< major * 10 + minor
  int max_cluster_size = 16;          ///< largest cluster the launcher may use; 1 disables clusters
  int shared_bytes_per_sm = 233472;   ///< shared memory of an SM (the stashes)
  int shared_bytes_per_cta = 232448;  ///< the most one CTA may ask for (opt-in)
  /// Clusters of n CTAs (index n, 1 to 16) of two CTAs an SM that the device runs at once
  /// (cudaOccupancyMaxActiveClusters). A cluster stays within one GPC, so sizes that divide a
  /// GPC's SMs unevenly leave some idle. 0 where unknown (taken as leaving none idle). The
  /// default is the H200's (and the H100 SXM's, of 132 SMs too).
  int clusters_at_two_an_sm[17] = {0,  264, 132, 79, 62, 47, 39, 32, 30,
                                   23, 21,  16,  16, 14, 14, 14, 14};
};

/// Vector access shared by every tensor of one call, derived from pointers and row strides.
struct row_layout {
  int vec = 1;                ///< elements per vector access: 16 / sizeof(T), or 1 as the fallback
  bool shifted = false;       ///< row starts are not vec-aligned (but equally misaligned in every
                              ///< tensor): each row peels a head up to the next 16-byte boundary
  bool contiguous = false;    ///< every tensor's rows follow each other (row stride == cols, or
                              ///< one row), equally aligned: short rows may be tiled (see
                              ///< kernel_config::tiled)
  bool out_of_place = false;  ///< the output is none of the inputs (not in place): the launchers
                              ///< without a workspace may keep a split plan's workspace in the
                              ///< output's first row (plan::workspace_in_output)
};

/// The launch configuration chosen for one call. Inspect it with `plan_for` or
/// `softmax_forward_plan` / `softmax_backward_plan`; it is plain data.
struct plan {
  /// The kernel family (see `algorithm`).
  algorithm algo = algorithm::registers;
  int config = 0;           ///< index into detail::kernel_configs (the dispatch switch's key)
  int vec = 1;              ///< elements per vector access
  bool shifted = false;     ///< rows peel a misaligned head
  int threads_per_row = 1;  ///< threads of one CTA that share a row
  int vecs_per_thread = 1;  ///< vector slots each thread holds of a row per pass
  int rows_per_thread = 1;  ///< rows each thread holds (short rows: several, see kernel_config)
  bool tiled = false;       ///< a CTA's rows copied through a shared-memory tile (short
                            ///< contiguous rows, see kernel_config::tiled)
  int rows_per_cta = 1;     ///< rows one CTA (or one cluster) handles
  /// Threads of one CTA.
  int threads_per_cta = 1;
  int cluster_size = 1;              ///< CTAs that share one row (1: no cluster)
  std::int64_t windows = 0;          ///< vector windows in the widest row, peeled head included
                                     ///< (none in tiled rows: row_windows)
  std::int64_t grid_ctas = 0;        ///< CTAs launched for `rows` rows
  int split_ctas = 0;                ///< split, staged split: CTAs that share one row
  int row_groups = 0;                ///< split, staged split: rows in flight at once
                                     ///< (grid = row_groups * split_ctas)
  int stash_tiles = 0;               ///< streaming, split: tiles a CTA keeps in shared memory
                                     ///< between the passes
  int stash_halves = 0;              ///< hinted split (streaming when forced), backward: tiles,
                                     ///< besides `stash_tiles`, of which a CTA keeps dy alone
                                     ///< in shared memory, reading y again
  std::int64_t workspace_bytes = 0;  ///< bytes of workspace the plan needs (split, staged split)
  bool workspace_in_output = false;  ///< split, staged split planned without a workspace: the
                                     ///< launcher keeps the `workspace_bytes` in the output's
                                     ///< first row (from its first 16-byte boundary), whose
                                     ///< windows there a second kernel stores last
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
  bool clustered;  ///< CTAs form clusters (sm_90+) of 2..max_cluster_size, chosen per call
  bool scalar_ok;  ///< also instantiated with vec == 1 (misaligned fallback)
  /// Rows a thread holds, its `bytes` shared among them: several for short rows (see
  /// first_short_row_config), whose threads of a row hold one vector of it each.
  int rows_per_thread = 1;
  /// Short contiguous rows (row_layout::contiguous): a CTA's rows, one span of each tensor,
  /// copied into shared memory in 16-byte vectors, held from there as in registers otherwise,
  /// normalized in place and copied out (see first_tiled_config).
  bool tiled = false;
  /// Split CTAs that read tiles of their share twice give their accesses L2 hints (fp32 forward
  /// and scalar fp32 backward ones do in any split configuration: hints_second_reads). Not
  /// scalar (see hinted_split_config).
  bool l2_hints = false;
};

inline constexpr int max_cluster_size = 16;  // non-portable beyond 8

// 128 bytes a thread: the bytes in flight per SM, not the element count, set the speed of a
// load-reduce-store kernel. Measured on the H200: 16-bit rows held as 32 elements a thread (64
// bytes, the same 32 registers of converted floats as fp32) ran at 55-65% of copy from 2K
// columns on, fp32 at 98%; holding 16-bit elements packed (64 a thread in 32 registers) moves as
// many bytes as fp32 (benchmarks/TUNING.md). Sub-warp rows share 128-thread CTAs; whole-warp
// and longer rows use 256-thread CTAs, and beyond one CTA as many CTAs of a cluster as they
// need (the cluster size is a launch parameter), of 128 threads where that leaves fewer slots
// idle. Threads per row are compile-time constants:
// chosen per call they cost up to 20% (benchmarks/TUNING.md). A 512-thread CTA holds twice
// one CTA's share where clusters are unavailable; CTAs of 256 bytes a thread hold the longest
// forward register rows, and those of 288 bytes (fp32) and 144 (backward) hold rows a little
// longer at the same CTAs an SM (cluster144_config). Streaming tiles are 256 threads x 128 bytes.
// Staged CTAs (forward) hold their 128 to 256 bytes a thread in shared memory instead of
// registers.
//
// Rows of one CTA of 4 to 256 threads also come in 80, 96, 112 and 144 bytes a thread (5-9
// vectors), so that each row takes the smallest that holds it
// (one_cta_planned) and leaves at most a fifth of its slots idle, not up to half: an idle slot
// costs its exps and conversions like a full one, which the 16-bit kernels, issuing an
// instruction most cycles, pay in speed. On
// the H200 (rows*cols = 2^27, benchmarks/TUNING.md, note 56) bf16 forward 4097 columns ran at 93%
// of copy in 64 threads of 144 bytes against 58% in 128 of 128 bytes, 2049 at 94% against 56%, 5000
// at 95.5% against 74% (80 bytes, four CTAs an SM: ctas_per_sm); bf16 backward 4097 at 101%
// against 68%; fp32 forward 4097 at 98% against 91%.
inline constexpr kernel_config kernel_configs[] = {
    {algorithm::registers, 1, 128, 128, false, true},            // 0
    {algorithm::registers, 2, 128, 128, false, true},            // 1
    {algorithm::registers, 4, 80, 128, false, false},            // 2
    {algorithm::registers, 4, 96, 128, false, false},            // 3
    {algorithm::registers, 4, 112, 128, false, false},           // 4
    {algorithm::registers, 4, 128, 128, false, true},            // 5
    {algorithm::registers, 4, 144, 128, false, false},           // 6
    {algorithm::registers, 8, 80, 128, false, false},            // 7
    {algorithm::registers, 8, 96, 128, false, false},            // 8
    {algorithm::registers, 8, 112, 128, false, false},           // 9
    {algorithm::registers, 8, 128, 128, false, true},            // 10
    {algorithm::registers, 8, 144, 128, false, false},           // 11
    {algorithm::registers, 16, 80, 128, false, false},           // 12
    {algorithm::registers, 16, 96, 128, false, false},           // 13
    {algorithm::registers, 16, 112, 128, false, false},          // 14
    {algorithm::registers, 16, 128, 128, false, true},           // 15
    {algorithm::registers, 16, 144, 128, false, false},          // 16
    {algorithm::registers, 32, 80, 256, false, false},           // 17
    {algorithm::registers, 32, 96, 256, false, false},           // 18
    {algorithm::registers, 32, 112, 256, false, false},          // 19
    {algorithm::registers, 32, 128, 256, false, true},           // 20
    {algorithm::registers, 32, 144, 256, false, false},          // 21
    {algorithm::registers, 64, 80, 256, false, false},           // 22
    {algorithm::registers, 64, 96, 256, false, false},           // 23
    {algorithm::registers, 64, 112, 256, false, false},          // 24
    {algorithm::registers, 64, 128, 256, false, true},           // 25
    {algorithm::registers, 64, 144, 256, false, false},          // 26
    {algorithm::registers, 128, 80, 256, false, false},          // 27
    {algorithm::registers, 128, 96, 256, false, false},          // 28
    {algorithm::registers, 128, 112, 256, false, false},         // 29
    {algorithm::registers, 128, 128, 256, false, true},          // 30
    {algorithm::registers, 128, 144, 256, false, false},         // 31
    {algorithm::registers, 256, 80, 256, false, false},          // 32
    {algorithm::registers, 256, 96, 256, false, false},          // 33
    {algorithm::registers, 256, 112, 256, false, false},         // 34
    {algorithm::registers, 256, 128, 256, false, true},          // 35
    {algorithm::registers, 256, 144, 256, false, false},         // 36
    {algorithm::registers, 512, 128, 512, false, false},         // 37: without clusters
    {algorithm::cluster, 128, 128, 128, true, false},            // 38
    {algorithm::cluster, 256, 128, 256, true, false},            // 39
    {algorithm::cluster, 256, 256, 256, true, false},            // 40
    {algorithm::streaming, 256, 128, 256, false, true},          // 41
    {algorithm::streaming, 256, 128, 256, true, true},           // 42
    {algorithm::split, 256, 128, 256, false, true},              // 43
    {algorithm::staged, 256, 128, 256, true, false},             // 44: forward only
    {algorithm::staged, 256, 256, 256, true, false},             // 45: forward only
    {algorithm::staged_split, 256, 128, 256, false, false},      // 46: forward only
    {algorithm::registers, 1, 128, 128, false, false, 8},        // 47: short rows, 8 a thread
    {algorithm::registers, 2, 128, 128, false, false, 8},        // 48
    {algorithm::registers, 4, 128, 128, false, false, 8},        // 49
    {algorithm::registers, 8, 128, 128, false, false, 8},        // 50
    {algorithm::registers, 16, 128, 128, false, false, 8},       // 51
    {algorithm::registers, 1, 128, 128, false, false, 8, true},  // 52: short rows, tiled
    {algorithm::registers, 2, 128, 128, false, false, 8, true},  // 53
    {algorithm::registers, 4, 128, 128, false, false, 8, true},  // 54
    {algorithm::registers, 8, 128, 128, false, false, 8, true},  // 55
    {algorithm::cluster, 256, 144, 256, true, false},            // 56: backward, beyond 39
    {algorithm::cluster, 256, 288, 256, true, false},            // 57: forward, beside 40
    {algorithm::staged, 256, 160, 256, true, false},             // 58: forward only, 40 KB
    {algorithm::staged, 256, 192, 256, true, false},             // 59: forward only, 48 KB
    // 60: split (43) with L2 hints (hinted_split_config)
    {algorithm::split, 256, 128, 256, false, false, 1, false, true},
};
inline constexpr int num_kernel_configs =
    static_cast<int>(sizeof(kernel_configs) / sizeof(kernel_configs[0]));

inline constexpr int last_cta_config = 36;        // the largest one-CTA configuration with clusters
inline constexpr int wide_cta_config = 37;        // one 512-thread CTA, used without clusters
inline constexpr int narrow_cluster_config = 38;  // 128-thread CTAs: finer shares
inline constexpr int cluster_config = 39;
inline constexpr int wide_cluster_config = 40;
inline constexpr int streaming_config = 41;
inline constexpr int streaming_cluster_config = 42;
inline constexpr int split_config = 43;
inline constexpr int staged_config = 44;
inline constexpr int wide_staged_config = 45;  // 64 KB CTAs for rows 16 of 48 KB do not hold
inline constexpr int staged_split_config = 46;
// Rows of at most 16 vectors (16-bit: 128 columns, fp32: 64; a misaligned head included) take
// one vector a thread and 8 rows a thread, 128 bytes, in as many threads as the row has vectors
// (rounded up to a power of two; configurations 47-51: 1 to 16 threads a row): a warp's load
// covers 512 contiguous bytes of consecutive rows, and a thread has 8 loads in flight. One
// thread a row holding all of it, as longer rows do, left most of its slots idle (their exps
// taken all the same) and spread a warp's loads over rows up to 128 bytes apart: on the H200
// (rows*cols = 2^27, % of copy) bf16 forward 8 columns ran at 17.5% so against 83% now, 64 at
// 42% against 76%, backward 64 at 59% against 102%; fp32 forward 32 at 46% against 99%,
// misaligned 13 at 47% against 75.5%. Misaligned 16-bit rows keep one row a thread: a ragged
// window (read and written element-wise) in every row ran them slower (bf16 forward 60 columns
// 22% against 41.5%, backward 24% against 52%; benchmarks/TUNING.md, note 58).
inline constexpr int first_short_row_config = 47;
inline constexpr int last_short_row_config = 51;
// Short rows that are misaligned (row_layout::shifted) and contiguous (row_layout::contiguous:
// the rows of a tensor follow each other, as in a contiguous tensor whose cols are not a multiple
// of the vector) take the short-row configurations' threads and rows tiled (configurations
// 52-55, 1 to 8 threads a row): a CTA's 1024 / threads_per_row rows are one span of each tensor,
// copied into shared memory (18 KB a tensor) in 16-byte vectors whatever the rows' alignment, so
// that only the span's two ends are read and written element-wise in global memory; in the tile
// each row is windowed from its start (no head), a window read as the words that cover it (in_tile,
// row_io.cuh). The planner tiles forward rows of at most 8 vectors (16-bit: 64 columns, fp32:
// 32) and 16-bit backward rows of at most 4; tiled rows of 16 threads, measured slower (below),
// have no configuration. On the H200 (rows*cols = 2^27, % of copy,
// benchmarks/TUNING.md, note 59): bf16 forward 4 columns 28.7% tiled against 7.5%, 5 35% against
// 8%, 13 39% against 19%, 60 45% against 42.7%; backward 4 32.7% against 9.8%, 13 41.7% against
// 16%; fp32 forward 5 75% against 71%, 13 90% against 75.5%. Not planned: 16-bit backward rows of 8
// threads (60 columns: bf16 51.1% tiled against 51.6% in one row a thread, fp16 51.6% against
// 53.6%), 16-bit rows of 16 threads (a fifth configuration, removed: 77 columns: forward 28%
// against 33%, backward 30% against 42%; 100: 37.5% against 43%, 43.6% against 59.6%) and fp32
// backward (5: 79.6% against 81% in 8 rows a thread untiled, 13: 86.5% against 88%).
inline constexpr int first_tiled_config = 52;
inline constexpr int last_backward_tiled_config = 54;  // 4 threads a row
inline constexpr int last_tiled_config = 55;           // 8 threads a row
// Clusters of 144 bytes a thread (backward, rows that 16 CTAs of 128 bytes do not hold) and of
// 288 (fp32 forward, beside 256: see plan_for), at the same two CTAs an SM as 128 and 256 bytes
// (ctas_per_sm; ptxas, sm_90: backward 122 registers fp32 and 128 16-bit, fp32 forward 128, no
// spills).
inline constexpr int cluster144_config = 56;
inline constexpr int wide_cluster288_config = 57;
// Staged CTAs of 40 and 48 KB (160 and 192 bytes a thread; 5 and 4 an SM, ctas_per_sm) for
// 16-bit forward rows that 16 CTAs of 32 KB do not hold, before those of 64 KB, and, one CTA of
// 40 KB a row, for 16-bit forward rows of 16385-18432 columns in full launches (see plan_for).
inline constexpr int staged40_config = 58;
inline constexpr int staged48_config = 59;
// The split configuration whose CTAs give L2 hints (kernel_config::l2_hints), for backward and
// 16-bit forward rows of which nearly every CTA reads a tile twice (make_split_plan). A
// configuration of its own, so that the other split kernels keep their code: with the hinted copy
// of their loops beside the plain one, the 16-bit backward kernel's code doubled and its rows of
// 2^20-2^23 columns, which read no tile twice, ran 0.5-3.5 points slower on the H200, and the
// 16-bit forward split rows that read only their last tile again 1.5-3.5 (benchmarks/TUNING.md,
// notes 45, 70).
inline constexpr int hinted_split_config = 60;
static_assert(kernel_configs[hinted_split_config].algo == algorithm::split &&
                  kernel_configs[hinted_split_config].threads_per_row ==
                      kernel_configs[split_config].threads_per_row &&
                  kernel_configs[hinted_split_config].bytes == kernel_configs[split_config].bytes &&
                  kernel_configs[hinted_split_config].threads_per_cta ==
                      kernel_configs[split_config].threads_per_cta &&
                  kernel_configs[hinted_split_config].l2_hints &&
                  !kernel_configs[split_config].l2_hints,
              "the hinted split configuration is the split one but for its hints");

ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return (a + b - 1) / b;
}

/// Vector windows of a row of `cols` elements in configuration `c` at `layout`: the row plus,
/// for misaligned rows, the worst head (vec - 1 elements), which tiled rows do not peel (their
/// windows start at each row's start in the tile: in_tile, kernels.cuh).
constexpr std::int64_t row_windows(kernel_config const& c, row_layout layout,
                                   std::int64_t cols) noexcept {
  return ceil_div(cols + (layout.vec > 1 && layout.shifted && !c.tiled ? layout.vec - 1 : 0),
                  layout.vec);
}

/// Whether the planner gives rows of `elem_size`-byte elements at vector width `vec` the one-CTA
/// register configuration `c` for direction `dir`: the scalar fallback only those instantiated for
/// it (scalar_ok). On the H200 (rows*cols = 2^27, benchmarks/TUNING.md, notes 56, 57):
/// - fp32 rows not those of 96 and 112 bytes a thread, with which fp32 ran up to 7 points slower
///   than in 128 bytes with a quarter of the slots idle (3000 columns forward 92% of copy against
///   99%, 6000 95% against 98.5%), where 80 and 144 bytes ran faster; and rows of fewer than 32
///   threads 128 bytes alone (forward 260 and 300 columns at 95% and 94% in 8 threads of 144 and
///   16 of 80 bytes, against 99.6% and 99% in 16 threads of 128 bytes, half the slots idle);
/// - 16-bit backward rows not 144 bytes a thread at 32 threads or fewer, whose kernels run
///   unbounded (kernels.cuh) at 185-187 registers, 8 warps an SM: bf16 1100 columns ran at 86.5%
///   in 16 threads of 144 bytes against 101% in 32 of 80, 260 columns at 81%.
constexpr bool one_cta_planned(kernel_config const& c, direction dir, int vec,
                               std::size_t elem_size) noexcept {
  if (vec == 1) return c.scalar_ok;
  if (elem_size == 4)
    return c.bytes == 128 || (c.threads_per_row >= 32 && (c.bytes == 80 || c.bytes == 144));
  return !(dir == direction::backward && c.bytes == 144 && c.threads_per_row <= 32);
}

/// Vector slots per thread and row for a configuration at vector width `vec` (elements of
/// `elem_size` bytes): the configuration's bytes in 16-byte vectors, or in 32-bit registers of
/// one element each for the scalar fallback, over the rows a thread holds.
constexpr int slots_per_thread(kernel_config const& c, int vec, std::size_t elem_size) noexcept {
  return (vec > 1 ? c.bytes / (vec * static_cast<int>(elem_size)) : c.bytes / 4) /
         c.rows_per_thread;
}

/// Input tensors a direction holds per element: x (forward), dy and y (backward).
constexpr int tensors_of(direction dir) noexcept {
  return dir == direction::forward ? 1 : 2;
}

/// Shared memory a CTA needs besides its row data or stash: 1 KB reserved by the system and the
/// kernel's static shared memory (the exchange, the staged kernels' mbarriers: 80-1056 bytes on
/// sm_90, ptxas), 1024 + 1056 rounded up to the 128-byte unit the SM allocates in. (At 1 KB for
/// the static part a stash filling its budget to within 32 bytes would leave one CTA an SM
/// fewer than planned; on the H200 no plan changed with the larger reserve.)
inline constexpr int cta_smem_reserve = 2176;

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
/// SM (ctas_per_sm): on the H200 (rows*cols = 2^27) bf16 2^22 columns ran at 68% of copy in 4
/// rows of 66 CTAs against 65% in 3 rows of 132 CTAs of three an SM without it, 2^24 at 65%
/// against 62% (benchmarks/TUNING.md, note 47).
ROWSOFTMAX_HOST_DEVICE constexpr bool keeps_last_tile(kernel_config const& c, int tensors,
                                                      std::size_t elem_size) noexcept {
  return tensors == 2 || elem_size == 4 || c.algo == algorithm::split;
}

/// CTAs of a configuration an SM runs at once for rows of `tensors` input tensors of
/// `elem_size`-byte elements, as its kernels' register bound sets them: the row data a thread
/// holds plus 48 registers (kernels.cuh). 16-bit forward CTAs that keep a tile in registers
/// (keeps_last_tile: the split ones) count their row data twice, the kept tile beside the one
/// they load and fold: their kernel spilled 224 bytes at the 80 registers of three CTAs an SM,
/// none at the 128 of two (ptxas, sm_90). Staged CTAs hold their row data in shared memory instead:
/// as many as an SM's shared memory holds (device_limits' default, that of Hopper), and a register
/// bound to match.
constexpr int ctas_per_sm(kernel_config const& c, int tensors, std::size_t elem_size) noexcept {
  if (stages(c))
    return static_cast<int>(device_limits{}.shared_bytes_per_sm /
                            (staging_bytes(c) + cta_smem_reserve));
  const bool packed_tile = tensors == 1 && elem_size == 2 && keeps_last_tile(c, tensors, elem_size);
  // Threads of several short rows keep each row's addresses and head beside its data: counted
  // as much again (at 80 registers the forward kernels spilled 44-136 bytes; ptxas, sm_90).
  const int data = c.bytes / 4 * (packed_tile || c.rows_per_thread > 1 ? 2 : 1) * tensors;
  // 16-bit forward CTAs of 80 bytes a thread: a slack of 44, four 256-thread (eight 128-thread)
  // CTAs an SM at 64 registers (no spills; ptxas, sm_90), for the bytes in flight: on the H200
  // (rows*cols = 2^27) bf16 5000 and 10000 columns ran at 95.5-96% of copy so, at three CTAs an
  // SM 85.5-86.5% (benchmarks/TUNING.md, note 56).
  const int slack = tensors == 1 && elem_size == 2 && c.bytes == 80 ? 44 : 48;
  const int bound = 65536 / (c.threads_per_cta * (data + slack));
  return bound > 1 ? bound : 1;
}

/// Where a split plan's partials start in its workspace: after one arrival counter (4 bytes)
/// per row group, 8-byte aligned.
constexpr std::int64_t split_partials_offset(int row_groups) noexcept {
  return (std::int64_t{row_groups} * 4 + 7) / 8 * 8;
}

/// Workspace of a split plan: the counters, then three sets of partials (16 bytes each: two
/// floats, each tagged in a word of 8 bytes) per group, one per CTA of the group: one for the
/// group's first meeting (kept for the windows of row 0 that a workspace in the output covers,
/// see plan::workspace_in_output), two in turn for the others.
constexpr std::int64_t split_workspace_bytes(int row_groups, int split_ctas) noexcept {
  return split_partials_offset(row_groups) + std::int64_t{row_groups} * 3 * split_ctas * 16;
}

/// Vector windows of a row that a configuration holds in one pass: all its threads of a row,
/// times `cluster` CTAs where it forms clusters.
constexpr std::int64_t window_capacity(kernel_config const& c, int vec, std::size_t elem_size,
                                       int cluster = max_cluster_size) noexcept {
  return std::int64_t{c.threads_per_row} * slots_per_thread(c, vec, elem_size) *
         (c.clustered ? cluster : 1);
}

/// Whether configuration `config` has a kernel for `dir` at vector width `vec` (16 / elem_size,
/// or 1: the scalar fallback) and `elem_size`-byte elements: exactly the configurations plan_for
/// can choose for them, on any device. The launchers compile a kernel for each of those and no
/// other (a kernel nobody launches still costs every caller its compile time and code: without
/// this rule fp32 callers compiled 73 kernels forward and 68 backward, for 45 and 40), and the
/// dispatcher refuses the others (`run`). plan_for's rules give:
/// - the scalar fallback: the configurations that allow it (kernel_config::scalar_ok);
/// - one CTA a row (configurations 0 to last_cta_config): those of one_cta_planned, but for fp32
///   those that hold no more than the short-row configurations (fp32 rows of at most 16 vectors,
///   aligned or not, take those);
/// - staged CTAs: forward; of 40, 48 and 64 KB, and the staged split, 16-bit only (fp32 forward
///   rows are staged only in CTAs of 32 KB);
/// - register clusters: of 128 threads, every row; of 256 threads and 128 bytes, all but 16-bit
///   forward rows (staged CTAs of 64 KB hold every row such clusters do: see below); of 256 and
///   288 bytes, fp32 forward (16-bit forward is staged wherever 256 bytes hold the row: the same
///   capacity); of 144 bytes, backward;
/// - the hinted split configuration: backward and 16-bit forward (fp32 forward split CTAs take
///   hints in the split configuration: hints_second_reads);
/// - tiled short rows: forward, and 16-bit backward of up to 4 threads a row;
/// - the others (short rows, a 512-thread CTA, streaming, split): every direction and type.
/// The host tests check over many shapes, layouts and devices that every plan's configuration
/// has a kernel.
constexpr bool has_kernel(int config, direction dir, int vec, std::size_t elem_size) noexcept {
  if (config < 0 || config >= num_kernel_configs) return false;
  kernel_config const& c = kernel_configs[config];
  const bool forward = dir == direction::forward, fp32 = elem_size == 4;
  if (vec == 1) return c.scalar_ok;
  if (config <= last_cta_config)
    return one_cta_planned(c, dir, vec, elem_size) &&
           !(fp32 && window_capacity(c, vec, elem_size) <=
                         window_capacity(kernel_configs[last_short_row_config], vec, elem_size));
  if (stages(c)) return forward && (config == staged_config || !fp32);
  if (config == cluster_config) return !forward || fp32;
  if (config == wide_cluster_config || config == wide_cluster288_config) return forward && fp32;
  if (config == cluster144_config) return !forward;
  if (config == hinted_split_config) return !forward || !fp32;
  if (config >= first_tiled_config && config <= last_tiled_config)
    return forward || (!fp32 && config <= last_backward_tiled_config);
  return true;
}

// What has_kernel's clusters rest on: a 16-bit forward row reaches the register clusters only
// where the staged CTAs of 64 KB, tried first, do not hold it in as many CTAs, and those hold as
// many windows a CTA as the clusters of 256 bytes a thread (twice those of 128).
static_assert(window_capacity(kernel_configs[wide_staged_config], 8, 2, 1) ==
                      window_capacity(kernel_configs[wide_cluster_config], 8, 2, 1) &&
                  window_capacity(kernel_configs[wide_cluster_config], 8, 2, 1) ==
                      2 * window_capacity(kernel_configs[cluster_config], 8, 2, 1) &&
                  kernel_configs[wide_staged_config].clustered &&
                  kernel_configs[wide_cluster_config].clustered &&
                  kernel_configs[cluster_config].clustered,
              "16-bit forward rows that no staged cluster holds no register cluster holds either");

/// Of the CTA slots a device has at two CTAs an SM, the share in per mille that clusters of `n`
/// CTAs fill at once (device_limits::clusters_at_two_an_sm); 1000 where unknown.
constexpr int cluster_fill(device_limits const& limits, int n) noexcept {
  const std::int64_t one = limits.clusters_at_two_an_sm[1];
  const std::int64_t at_n = n >= 1 && n <= max_cluster_size ? limits.clusters_at_two_an_sm[n] : 0;
  return one > 0 && at_n > 0 ? static_cast<int>(at_n * n * 1000 / one) : 1000;
}

/// The plan that runs `config` over rows of `windows` vector windows, with `cluster` CTAs a
/// row where the configuration forms clusters (streaming: the CTAs that share a row's tiles).
/// The result may not hold the row: callers check with `plan_holds`.
constexpr plan make_plan(int config, row_layout layout, std::int64_t rows, std::int64_t windows,
                         std::size_t elem_size, int cluster = 1) noexcept {
  kernel_config const& c = kernel_configs[config];
  plan p{};
  p.algo = c.algo;
  p.config = config;
  p.vec = layout.vec;
  p.shifted = layout.shifted;
  p.threads_per_row = c.threads_per_row;
  p.vecs_per_thread = slots_per_thread(c, layout.vec, elem_size);
  p.rows_per_thread = c.rows_per_thread;
  p.tiled = c.tiled;
  p.rows_per_cta = c.threads_per_cta / c.threads_per_row * c.rows_per_thread;
  p.threads_per_cta = c.threads_per_cta;
  p.cluster_size = c.clustered ? cluster : 1;
  p.windows = windows;
  p.grid_ctas = c.clustered || c.algo == algorithm::streaming ? rows * p.cluster_size
                                                              : ceil_div(rows, p.rows_per_cta);
  return p;
}

/// The groups of a split or staged split plan `p`: `groups` rows in flight of `ctas` CTAs each,
/// and the workspace they meet in.
constexpr plan with_groups(plan p, std::int64_t groups, std::int64_t ctas) noexcept {
  p.row_groups = static_cast<int>(groups);
  p.split_ctas = static_cast<int>(ctas);
  p.grid_ctas = groups * ctas;
  p.workspace_bytes = split_workspace_bytes(p.row_groups, p.split_ctas);
  return p;
}

/// Shared memory one tile of a streaming or split CTA takes in its stash: the thread's fragment
/// (the row data of every input tensor plus at most 16 bytes, kernels.cuh checks) for every thread.
ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t stash_tile_bytes(kernel_config const& c,
                                                               int tensors) noexcept {
  return std::int64_t{c.bytes * tensors + 16} * c.threads_per_cta;
}

/// Whether a CTA of the split configuration `c` that reads tiles of its share twice gives its
/// accesses L2 hints, so that L2 keeps those tiles for their second read (kernels.cuh,
/// tile_share::hintable), for rows of direction `dir`, `elem_size`-byte elements and vector
/// width `vec`: in hinted_split_config (backward and 16-bit forward rows of which nearly every CTA
/// reads a tile twice, make_split_plan), and in any split configuration fp32 forward rows
/// (unhinted, they ran up to 6 points slower on the H200, most rows of which few CTAs read a tile
/// twice 1-3 slower; benchmarks/TUNING.md, note 71) and the scalar fp32 backward fallback (not
/// measured without). The planner prices forward second reads as L2 hits (make_split_plan).
ROWSOFTMAX_HOST_DEVICE constexpr bool hints_second_reads(kernel_config const& c, direction dir,
                                                         std::size_t elem_size, int vec) noexcept {
  return c.l2_hints || (elem_size == 4 && (dir == direction::forward || vec == 1));
}

/// Shared memory a CTA of configuration `c` may stash tiles in at the occupancy its registers
/// allow (ctas_per_sm): its part of the SM's shared memory, less cta_smem_reserve, within what
/// one CTA may ask for.
constexpr std::int64_t stash_budget(kernel_config const& c, int tensors, std::size_t elem_size,
                                    device_limits const& limits) noexcept {
  std::int64_t budget =
      limits.shared_bytes_per_sm / ctas_per_sm(c, tensors, elem_size) - cta_smem_reserve;
  if (budget > limits.shared_bytes_per_cta - cta_smem_reserve)
    budget = limits.shared_bytes_per_cta - cta_smem_reserve;
  return budget > 0 ? budget : 0;
}

/// Tiles a CTA of configuration `c` keeps in shared memory: its stash_budget in whole tiles.
constexpr int stash_capacity(kernel_config const& c, int tensors, std::size_t elem_size,
                             device_limits const& limits) noexcept {
  return static_cast<int>(stash_budget(c, tensors, elem_size, limits) /
                          stash_tile_bytes(c, tensors));
}

/// Shared memory one half tile of a backward streaming or split CTA takes in its stash
/// (plan::stash_halves): dy's part of every thread's fragment.
ROWSOFTMAX_HOST_DEVICE constexpr std::int64_t stash_half_bytes(kernel_config const& c) noexcept {
  return std::int64_t{c.bytes} * c.threads_per_cta;
}

/// Half tiles (dy alone) a backward streaming or split CTA of configuration `c` keeps beside
/// `stash_tiles` whole ones: what its stash_budget holds beyond them. At two CTAs an SM on the H200
/// a CTA's 112 KB hold one tile of 68 KB and the dy of another (32 KB).
constexpr int stash_half_capacity(kernel_config const& c, std::size_t elem_size, int stash_tiles,
                                  device_limits const& limits) noexcept {
  const std::int64_t left =
      stash_budget(c, 2, elem_size, limits) - stash_tiles * stash_tile_bytes(c, 2);
  return left > 0 ? static_cast<int>(left / stash_half_bytes(c)) : 0;
}

/// Tiles (a tile: every thread of a CTA of `p`'s configuration, each slot once) in a row of `p`.
constexpr std::int64_t row_tiles(plan const& p) noexcept {
  return ceil_div(p.windows, std::int64_t{p.threads_per_row} * p.vecs_per_thread);
}

/// Windows of a row each CTA of a register cluster, staged or staged split plan `p` holds, the
/// same in every row: the widest row's over the CTAs that share it (the cluster, or the split
/// group), rounded up; within a CTA's slots where plan_holds(p). The launcher passes it to the
/// kernel, which so divides nothing before its loads.
constexpr int share_windows(plan const& p) noexcept {
  const int ctas =
      kernel_configs[p.config].algo == algorithm::staged_split ? p.split_ctas : p.cluster_size;
  return static_cast<int>(ceil_div(p.windows, ctas));
}

/// Tiles a CTA stashes of a share of `share` tiles: those not in registers (`in_registers`:
/// the last tile, or none), within the `capacity` of its shared memory.
constexpr int stashed_tiles(std::int64_t share, int in_registers, int capacity) noexcept {
  const std::int64_t rest = share - in_registers;
  return static_cast<int>(rest < 0 ? 0 : rest < capacity ? rest : capacity);
}

/// Half tiles (plan::stash_halves) each CTA of the split plan `p` keeps, its whole stashed tiles
/// set: backward CTAs whose shares of `share` tiles exceed what they hold (the `in_registers`
/// tile and `p.stash_tiles`) keep the dy of the next ones where their stash leaves room
/// (stash_half_capacity), so that they read only y of those again; forward none. Planned for
/// hinted split plans only (make_split_plan); the streaming kernel takes them when forced.
constexpr int stashed_halves(direction dir, plan const& p, std::int64_t share, int in_registers,
                             std::size_t elem_size, device_limits const& limits) noexcept {
  if (dir != direction::backward) return 0;
  return stashed_tiles(
      share, in_registers + p.stash_tiles,
      stash_half_capacity(kernel_configs[p.config], elem_size, p.stash_tiles, limits));
}

/// Tiles a streaming CTA of configuration `c` may stash: what its shared memory holds
/// (stash_capacity), forward at most one. On the H200 (benchmarks/TUNING.md, note 65) forward CTAs
/// of one stashed tile read rows longer than 16 CTAs hold 0-7 points faster than without a
/// stash (fp32 327680 columns: 86.4% of copy against 79.2%; bf16 786432: 75.8% against 70.9%;
/// 2^24 even), and of two slower than of one (fp32 327680: 82.4%; 262143: 77.6% against 87.5%).
constexpr int streaming_stash_capacity(kernel_config const& c, direction dir, std::size_t elem_size,
                                       device_limits const& limits) noexcept {
  const int capacity = stash_capacity(c, tensors_of(dir), elem_size, limits);
  return dir == direction::forward && capacity > 1 ? 1 : capacity;
}

/// Tiles each CTA of the streaming plan `p` (its configuration and cluster size) stashes: its
/// share of the row's tiles but the one it keeps in registers, within streaming_stash_capacity.
constexpr int streaming_stash_tiles(direction dir, plan const& p, std::size_t elem_size,
                                    device_limits const& limits) noexcept {
  kernel_config const& c = kernel_configs[p.config];
  return stashed_tiles(ceil_div(row_tiles(p), p.cluster_size),
                       keeps_last_tile(c, tensors_of(dir), elem_size) ? 1 : 0,
                       streaming_stash_capacity(c, dir, elem_size, limits));
}

/// The streaming plan for rows of `windows` windows: the fewest CTAs (up to `max_cluster`, a
/// cluster where more than one) whose shares of the row's tiles fit their registers and
/// (backward) one stashed tile, so the row is read once; rows longer than that take
/// `max_cluster` CTAs (none without a tile) with their stashes (streaming_stash_tiles), reading
/// what they do not hold twice. A CTA's tiles
/// are read one after the other (each tile's loads wait for the previous tile's fold), so
/// shares of two tiles beat three: fp32 at 262144 columns ran at 84% of copy in 11 CTAs of 3
/// tiles, 91% in 16 of 2 (benchmarks/TUNING.md).
constexpr plan make_streaming_plan(direction dir, row_layout layout, std::int64_t rows,
                                   std::int64_t windows, std::size_t elem_size,
                                   device_limits const& limits, int max_cluster) noexcept {
  kernel_config const& c = kernel_configs[streaming_cluster_config];
  const int tensors = tensors_of(dir);
  const int in_registers = keeps_last_tile(c, tensors, elem_size) ? 1 : 0;
  // Tiles of a read-once share: backward a stashed one too (half the CTAs); forward CTAs stash
  // only what they would otherwise read twice, as many CTAs as without a stash.
  const int quick =
      (dir == direction::backward && stash_capacity(c, tensors, elem_size, limits) >= 1 ? 1 : 0) +
      in_registers;
  const std::int64_t tiles =
      row_tiles(make_plan(streaming_config, layout, rows, windows, elem_size));
  std::int64_t n = quick > 0 ? ceil_div(tiles, quick) : tiles;
  if (n > max_cluster) n = max_cluster;
  if (n > tiles) n = tiles;
  if (n < 1) n = 1;
  plan p = n < 2 ? make_plan(streaming_config, layout, rows, windows, elem_size)
                 : make_plan(streaming_cluster_config, layout, rows, windows, elem_size,
                             static_cast<int>(n));
  p.stash_tiles = streaming_stash_tiles(dir, p, elem_size, limits);
  return p;
}

/// The split plan for rows of `windows` windows. The CTAs the device runs at once (its
/// registers' bound) form `row_groups` groups of `split_ctas` CTAs, a group taking one row at a
/// time; a CTA keeps the last tile of its share in registers (keeps_last_tile) and up to
/// `stash_tiles` more in shared memory (what its part of the SM holds), in hinted backward plans
/// the dy of up to `stash_halves` more in what is left of it (stash_half_capacity), and reads the
/// rest of its share twice. The groups minimise rounds x (the tile transfers of a CTA a round -
/// loads, stores, second loads - plus the meeting's cost); they count half tiles as read twice
/// whole (on the H200 more backward groups, each CTA reading more twice, ran slower than the cost
/// said, benchmarks/TUNING.md, note 46 (c): half tiles counted as half a transfer would take more
/// groups at 296 of 1096 backward shapes of 300000-2^24 columns). Most rows count the average CTA
/// and one transfer for the meeting, so rows that fit on chip are read once. The forward (but for
/// the 16-bit scalar fallback), whose second reads come from L2 (hinted: hints_second_reads),
/// counts the mean of the average and the largest share (a round lasts until the group's slowest
/// CTA arrives) and a meeting of 1.5 + ctas / 80 transfers, and reads at most 2.5 tiles a CTA
/// twice on average (fp32: 3.5 and more ran at 65-69% of copy, L2 no longer holding them), 4
/// 16-bit (two CTAs an SM instead of three: about 32 MB of tiles read twice either), so it takes
/// more groups. Fitted on the H200 to 20 fp32 shapes of 333333-2^24 columns (within 0.4 points of
/// the best groups measured; 2^21 columns x 64 rows at 78% of copy against 74%) and checked on 7
/// more (benchmarks/TUNING.md, note 46); for 16-bit rows checked on 19 shapes of 3.4M-2^25
/// columns against the plain cost, 17 of them 0.2-6.2 points faster (2^24 x 8 in 2 groups, 67.1%
/// against 65.4% in one), two 0.6-1.2 slower (benchmarks/TUNING.md, note 74). `split_ctas` < 2:
/// the tier does not apply.
constexpr plan make_split_plan(direction dir, row_layout layout, std::int64_t rows,
                               std::int64_t windows, std::size_t elem_size,
                               device_limits const& limits) noexcept {
  kernel_config const& c = kernel_configs[split_config];
  plan p = make_plan(split_config, layout, rows, windows, elem_size);
  const int tensors = tensors_of(dir);
  const std::int64_t resident = std::int64_t{limits.sm_count} * ctas_per_sm(c, tensors, elem_size);
  const int stash = stash_capacity(c, tensors, elem_size, limits);
  const int in_registers = keeps_last_tile(c, tensors, elem_size) ? 1 : 0;
  const std::int64_t held = stash + in_registers;
  const std::int64_t tiles = row_tiles(p);
  const bool l2_rereads = dir == direction::forward && (elem_size == 4 || layout.vec > 1);
  const std::int64_t most_groups = rows < resident / 2 ? rows : resident / 2;
  // CTAs a row with g groups: the resident CTAs shared out, none without a tile.
  auto ctas_of = [&](std::int64_t g) { return resident / g < tiles ? resident / g : tiles; };
  double best_cost = -1;
  std::int64_t best_groups = 1;
  for (std::int64_t g = 1; g <= most_groups; ++g) {
    // Tile transfers of a CTA a round: shares differ by at most one tile, q or q + 1.
    const std::int64_t ctas = ctas_of(g);
    const std::int64_t q = tiles / ctas, r = tiles % ctas;
    const std::int64_t again =
        r * (q + 1 > held ? q + 1 - held : 0) + (ctas - r) * (q > held ? q - held : 0);
    const double average = static_cast<double>(2 * tiles + again) / static_cast<double>(ctas);
    double round = average + 1.0;
    if (l2_rereads) {
      if (g > 1 && 2 * again > (elem_size == 4 ? 5 : 8) * ctas) continue;  // see above
      const std::int64_t largest = q + (r > 0 ? 1 : 0);
      const double slowest =
          static_cast<double>(2 * largest + (largest > held ? largest - held : 0));
      round = (average + slowest) / 2 + 1.5 + static_cast<double>(ctas) / 80.0;
    }
    const double cost = static_cast<double>(ceil_div(rows, g)) * round;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_groups = g;
    }
  }
  const std::int64_t ctas = ctas_of(best_groups);
  p = with_groups(p, best_groups, ctas);
  p.stash_tiles = stashed_tiles(ceil_div(tiles, ctas), in_registers, stash);
  // Backward and 16-bit forward rows of which at least 7/8 of a group's CTAs read a tile twice:
  // the hinted kernel, the same configuration but for its hints (hinted_split_config); the
  // forward rows' second reads unhinted, in two groups at 2^24 16-bit columns, ran at 62.7% of
  // copy against 67.6% hinted (benchmarks/TUNING.md, note 74). On the H200 (rows*cols =
  // 2^27, one group of 264 CTAs, each holding two tiles) hinted bf16 and fp16 rows of 2^24
  // columns (1024 tiles, every CTA reading one or two twice) ran 4.4-4.9 points faster (71.3-71.7%
  // of copy against 66.6-66.8%), of 768 tiles (91% of the CTAs reading one twice) 2.7-3.2 faster,
  // but of 544-720 tiles (6-73%) 0.1-4.9 slower: where few CTAs read a tile twice, its second
  // read mostly hits L2 unhinted, and the hints' evict-first on the rest cost more. fp32 alike:
  // 544-704 tiles (4.5M-5.8M columns, 6-67%) 1.9-4 points faster unhinted, 768 tiles 3 slower
  // and 3M columns (2 groups of 132 CTAs, 91%) 3.5-5 slower (benchmarks/TUNING.md, notes 45, 70,
  // 71).
  const std::int64_t q = tiles / ctas, r = tiles % ctas;
  if ((dir == direction::backward || elem_size < 4) && layout.vec > 1 &&
      (q > held || (q == held && 8 * r >= 7 * ctas)))
    p.config = hinted_split_config;
  // Half tiles only there. On the H200 (rows*cols = 2^27, % of copy, two passes against the
  // same plans without them; benchmarks/TUNING.md, note 73) hinted rows ran 1.1-1.7 points
  // faster with one (bf16 2^24 72.3-72.5% against 71.0-71.4%, fp16 2^24 72.4-72.5 against
  // 71.2-71.4, fp32 2^23 75.6-75.8 against 74.1-74.6, 6291456 78.4-78.6 against 76.7-77.3), fp32
  // 2^24 within its spread, 3145728 (two groups) 0.4-2.5 below; unhinted split rows 3-17 points
  // slower (bf16 3145728 70.4-70.6 against 73.8-74.4, 600000 69.4-69.7 against 80.5-81.3; fp32
  // 333333 70.3-71.0 against 85.7-86.9), and so were streamed rows (bf16 527852 68.0-68.2
  // against 83.5-84.6, fp32 263927 74.2-74.5 against 89.2-89.6).
  if (p.config == hinted_split_config)
    p.stash_halves = stashed_halves(dir, p, ceil_div(tiles, ctas), in_registers, elem_size, limits);
  return p;
}

/// The staged split plan for forward rows of `windows` windows: groups of CTAs that hold a
/// row in their shared memory (32 KB a CTA), of the CTAs the device runs at once (as its shared
/// memory holds them); as many groups as the fewest rounds of rows need, those CTAs shared out
/// evenly among them, but at most twice the CTAs a row needs (a few rows: the more CTAs meet,
/// the longer they wait; fp32 at 262145 columns, rows 1, took 22.5 us in 792 CTAs). The rows in
/// flight meet in turn, and while a group meets its CTAs load nothing: where the device holds a
/// single row at a time the CTAs waited for each other more than they moved data (H200: bf16 2^23
/// columns at 42% of copy, fp32 2^22 at 46%, against 55% and 63% for streaming and split), and
/// with three rows (bf16 2^22) the split was faster (66-67% against 62-63%), with four even
/// (63-65% either), with five and more slower (bf16 2^20: 68% against 72-73%;
/// benchmarks/TUNING.md), so at least four rows must fit. `split_ctas` < 2: no such plan.
constexpr plan make_staged_split_plan(row_layout layout, std::int64_t rows, std::int64_t windows,
                                      std::size_t elem_size, device_limits const& limits) noexcept {
  kernel_config const& c = kernel_configs[staged_split_config];
  const plan p = make_plan(staged_split_config, layout, rows, windows, elem_size);
  const std::int64_t cta_bytes = staging_bytes(c) + cta_smem_reserve;
  std::int64_t per_sm =
      cta_bytes <= limits.shared_bytes_per_cta ? limits.shared_bytes_per_sm / cta_bytes : 0;
  if (per_sm > ctas_per_sm(c, 1, elem_size)) per_sm = ctas_per_sm(c, 1, elem_size);
  const std::int64_t resident = std::int64_t{limits.sm_count} * per_sm;
  const std::int64_t need = ceil_div(windows, window_capacity(c, layout.vec, elem_size));
  if (need < 2 || 4 * need > resident) return p;
  const std::int64_t most = resident / need < rows ? resident / need : rows;
  const std::int64_t groups = ceil_div(rows, ceil_div(rows, most));  // as many as the rounds need
  return with_groups(p, groups, resident / groups < 2 * need ? resident / groups : 2 * need);
}

/// Whether a streaming plan keeps every CTA's share of the row on chip (its last tile in
/// registers where keeps_last_tile, the others in its stash), so the row is read once.
constexpr bool reads_once(plan const& p, direction dir, std::size_t elem_size) noexcept {
  return ceil_div(row_tiles(p), p.cluster_size) <=
         p.stash_tiles +
             (keeps_last_tile(kernel_configs[p.config], tensors_of(dir), elem_size) ? 1 : 0);
}

/// Tiles of a row that the CTAs of the streaming plan `p` read twice: those of each CTA's share
/// (shares differ by at most one tile) beyond the tile it keeps in registers (keeps_last_tile)
/// and its stash.
constexpr std::int64_t streamed_twice_tiles(plan const& p, direction dir,
                                            std::size_t elem_size) noexcept {
  const std::int64_t tiles = row_tiles(p), n = p.cluster_size;
  const std::int64_t held =
      p.stash_tiles +
      (keeps_last_tile(kernel_configs[p.config], tensors_of(dir), elem_size) ? 1 : 0);
  const std::int64_t q = tiles / n, r = tiles % n;
  return r * (q + 1 > held ? q + 1 - held : 0) + (n - r) * (q > held ? q - held : 0);
}

/// Whether `rows` rows that the streaming plan `p` reads partly twice run streamed rather than
/// split, given a workspace: where one tile of a row is read twice, or, forward, at most three
/// eighths of its tiles and the launch fills at least eight waves of the CTAs an SM holds. On the
/// H200 (fp32, 16 CTAs of 2 tiles held; benchmarks/TUNING.md, notes 65, 66) forward 262145 columns
/// (1 tile of 33 read twice) ran streamed at 63-86% of copy against 57-74% split at 64-511 rows;
/// 327680-393216 columns (8-16 of 40-48) at 256-409 rows 2.3-6 points faster streamed, at 192
/// rows within 2.6, at 16-128 rows (fewer than six waves) split up to 9 points faster back to
/// back (within 0.5 at a few); 458752 and 491520 (24 of 56, 28 of 60) within 0.7 either way at
/// 273-292 rows, 516096 (31 of 63) 1.3-2.1 points slower. Backward, one tile twice: 262143
/// columns (misaligned) x 512 rows 92.3% streamed against 85.0% split, 262145 x 64 69.4% against
/// 63.9%, x 8 32.2% against 28.6%, 270000 x 497 86.9% against 86.1% (more tiles not measured).
/// Rows streamed through one CTA (no clusters) are split: not measured, and a row then has one
/// SM where the split gives it several.
constexpr bool streams_partly_twice(plan const& p, direction dir, std::int64_t rows,
                                    std::size_t elem_size, device_limits const& limits) noexcept {
  if (p.cluster_size < 2) return false;
  const std::int64_t twice = streamed_twice_tiles(p, dir, elem_size);
  if (twice == 1) return true;
  if (dir == direction::backward) return false;
  const std::int64_t waves =
      rows * p.cluster_size /
      (std::int64_t{limits.sm_count} *
       ctas_per_sm(kernel_configs[p.config], tensors_of(direction::forward), elem_size));
  return 8 * twice <= 3 * row_tiles(p) && waves >= 8;
}

/// Whether plan `p` can run its rows: a known configuration, a cluster within 16, groups (split,
/// staged split) that match the grid, half tiles in the stash (stash_halves) only where
/// streaming or split, and (but for streaming and split) the row within its threads' slots
/// (staged split: of its split CTAs).
constexpr bool plan_holds(plan const& p) noexcept {
  if (p.config < 0 || p.config >= num_kernel_configs) return false;
  kernel_config const& c = kernel_configs[p.config];
  if (p.cluster_size < 1 || p.cluster_size > (c.clustered ? max_cluster_size : 1)) return false;
  if (p.stash_halves < 0 ||
      (p.stash_halves > 0 && c.algo != algorithm::split && c.algo != algorithm::streaming))
    return false;
  if (splits(c) && !(p.split_ctas >= 1 && p.row_groups >= 1 && p.stash_tiles >= 0 &&
                     p.grid_ctas == std::int64_t{p.split_ctas} * p.row_groups))
    return false;
  if (c.algo == algorithm::split) return true;
  if (c.algo == algorithm::staged_split)
    return p.stash_tiles == 0 &&
           std::int64_t{p.threads_per_row} * p.vecs_per_thread * p.split_ctas >= p.windows;
  if (c.algo == algorithm::streaming) return p.stash_tiles >= 0;
  return std::int64_t{p.threads_per_row} * p.vecs_per_thread * p.cluster_size >= p.windows;
}

}  // namespace detail

/// The plan the launchers use for `rows` rows of `cols` elements of `elem_size` bytes.
///
/// Pure and constexpr: depends only on its arguments. Rows of at most 16 vectors (128 16-bit or
/// 64 fp32 elements) take one vector a thread, 8 rows a thread (first_short_row_config), copied
/// through shared memory where they are misaligned and contiguous, of at most 8 vectors forward
/// and 4 backward (backward 16-bit only; first_tiled_config); misaligned 16-bit rows that are
/// not so tiled are not short rows. Other rows that one 256-thread CTA holds
/// (36 KB a tensor: 9K fp32 or 18K bf16/fp16 elements; forward launches of a few rows beyond 32
/// KB take the clusters below) use the smallest register configuration that holds them (sub-warp
/// rows share a warp; rows of 4 or more threads take 80 to 144 bytes a thread, see
/// one_cta_planned; 16-bit forward rows of the widest, 256 threads of 144 bytes, in launches of
/// more than 24 rows an SM, one staged CTA of 40 KB instead); longer rows the fewest CTAs of a
/// cluster (up to `limits.max_cluster_size`) that hold them: forward rows in launches of a few
/// rows (at most two CTAs an SM) in 128-thread CTAs at 128 bytes a thread, the most CTAs; other
/// 16-bit forward rows in shared memory (staged, 32 KB a CTA, or 40, 48 or 64 KB beyond 16 of
/// those; 40 KB for rows of three 32 KB CTAs the third at most an eighth full and of four that
/// leave a fifth idle), and so fp32 forward
/// rows of 5 to 16 CTAs of 32 KB (or 4 more than 7/8 full) in launches of more than 3 and at most
/// 60 of them an SM; others in registers, first at 128 bytes a thread (CTAs of 256 threads, or of
/// 128 where they leave fewer slots idle), then, forward only, at 256 (also where 128 bytes a
/// thread would take more than 8 CTAs a row and more CTAs than 3/4 of the SMs in all, or, CTAs of
/// 128 threads, more than 8 an SM), or, fp32, at 288 where that takes fewer CTAs that the device
/// runs about as fully at once (`limits.clusters_at_two_an_sm`) or 256 does not hold the row;
/// backward rows that 128 bytes a thread do not hold, at 144; without clusters, one 512-thread
/// CTA. 16-bit backward rows that
/// would take 11 or 12 CTAs of 256 threads, in launches of more CTAs than SMs, stream instead
/// (read once, half the CTAs). Longer rows stream in tiles through the fewest
/// CTAs of a cluster (or one CTA) that keep the row on chip (registers and a shared-memory stash),
/// or through as many as allowed, reading the overflow twice; `with_workspace` (the launchers given
/// a workspace) they are split over many CTAs instead (but rows of which streaming reads
/// little twice, see streams_partly_twice): 16-bit forward rows of which the
/// device holds four in shared memory staged (see `algorithm::staged_split`, sm_90), other rows
/// with their tiles in registers and stashes (see `algorithm::split`). Without a workspace, rows
/// out of place (`layout.out_of_place`) on devices with clusters are split the same way, their
/// workspace kept in the output's first row (`plan::workspace_in_output`). The scalar fallback
/// (`layout.vec == 1`, 32 elements a thread of any type) has the one-CTA configurations and streams
/// beyond (or splits, as above). Streaming and split size their stashes and groups by the
/// direction's tensors.
/// @pre rows >= 1, cols >= 1, elem_size in {2, 4}, layout.vec in {1, 16 / elem_size}.
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, std::size_t elem_size,
                        row_layout layout, device_limits const& limits,
                        bool with_workspace = false) noexcept {
  using namespace detail;
  const int vec = layout.vec;
  const std::int64_t head = layout.shifted ? vec - 1 : 0;
  const std::int64_t windows = ceil_div(cols + head, vec);
  const int max_cluster = limits.compute_capability >= 90 ? limits.max_cluster_size : 1;
  auto capacity = [&](int config, int cluster) {
    return window_capacity(kernel_configs[config], vec, elem_size, cluster);
  };

  // Short rows: as many threads as the row has vectors, 8 rows a thread, tiled where they are
  // misaligned and contiguous, of at most 8 vectors forward and 4 backward (backward 16-bit only;
  // see first_tiled_config); else not misaligned 16-bit rows (see first_short_row_config).
  if (vec > 1) {
    const std::int64_t tiled = row_windows(kernel_configs[first_tiled_config], layout, cols);
    const int last_tiled =
        dir == direction::forward ? last_tiled_config : last_backward_tiled_config;
    if (layout.shifted && layout.contiguous && !(elem_size == 4 && dir == direction::backward) &&
        tiled <= window_capacity(kernel_configs[last_tiled], vec, elem_size)) {
      int i = first_tiled_config;
      while (window_capacity(kernel_configs[i], vec, elem_size) < tiled) ++i;
      return make_plan(i, layout, rows, tiled, elem_size);
    }
    if (!(layout.shifted && elem_size == 2) &&
        windows <= window_capacity(kernel_configs[last_short_row_config], vec, elem_size)) {
      int i = first_short_row_config;
      while (window_capacity(kernel_configs[i], vec, elem_size) < windows) ++i;
      return make_plan(i, layout, rows, windows, elem_size);
    }
  }
  // CTAs of `config` a row needs.
  auto ctas = [&](int config) { return ceil_div(windows, capacity(config, 1)); };
  // A launch of at most two CTAs an SM when each row takes `n`.
  auto few = [&](std::int64_t n) { return rows * n <= 2 * std::int64_t{limits.sm_count}; };
  // The smallest one-CTA configuration that holds the row, of those planned (one_cta_planned);
  // the widest (256 threads of 144 bytes: 16385-18432 16-bit or 8193-9216 fp32 columns) not for
  // forward launches of a few rows, which spread such rows over the SMs in 128-thread clusters
  // (below). Rows just above 256 threads of 128 bytes took clusters before, leaving up to half
  // their slots idle: on the H200 (rows*cols = 2^27, benchmarks/TUNING.md, note 61) bf16 forward
  // 16385 columns ran at 90.8% of copy so against 80.6% in two staged CTAs, 18000 at 91.4%
  // against 83.4%; backward 16385 at 99.9% against 80.3% in three 128-thread CTAs; fp32 forward
  // 8193 at 96.7% against 91.7%.
  //
  // 16-bit forward rows that take that widest configuration, in launches of more than 24 rows an
  // SM: one staged CTA of 40 KB instead (staged40_config, a cluster of one; 5 CTAs an SM with 200
  // KB of rows in flight, against 2 with 72 KB). On the H200 (% of copy, rows*cols = 2^27, five
  // passes against the registers) bf16 16385 columns (misaligned) ran 0.9-1.7 points faster,
  // 18000 1.1-1.8, 17000 2.3-2.8 in two passes and 0.1 slower in three, 18432 within 0.6; fp16
  // 16385 and 18000 0-1.1 faster (18000 7-8 in two passes, where the registers read 86%), 17000
  // 0.6-1.6 slower and 18432 0-0.9 slower; rows 3169 and 4000 (bf16) 0.2-2.2 us faster or even.
  // In launches of up to 2400 rows the two were within 4% either way (rows 100 and 400 of 16385
  // and 18000: 0.3-1 us slower staged). fp32 rows of 8193-9216 columns ran as fast or up to 1.8
  // points slower so: not staged (benchmarks/TUNING.md, note 68).
  const bool few_forward_rows =
      dir == direction::forward && max_cluster >= 2 && few(ctas(narrow_cluster_config));
  static_assert(kernel_configs[staged40_config].threads_per_cta ==
                        kernel_configs[last_cta_config].threads_per_cta &&
                    kernel_configs[staged40_config].bytes > kernel_configs[last_cta_config].bytes,
                "one staged CTA of 40 KB holds every row the widest one-CTA configuration does");
  const bool staged_one_cta = dir == direction::forward && elem_size == 2 && vec > 1 &&
                              max_cluster >= 2 && rows > 24 * std::int64_t{limits.sm_count};
  for (int i = 0; i <= last_cta_config; ++i)
    if (one_cta_planned(kernel_configs[i], dir, vec, elem_size) && windows <= capacity(i, 1) &&
        !(i == last_cta_config && few_forward_rows))
      return i == last_cta_config && staged_one_cta
                 ? make_plan(staged40_config, layout, rows, windows, elem_size, 1)
                 : make_plan(i, layout, rows, windows, elem_size);
  if (vec > 1) {
    if (max_cluster < 2 && windows <= capacity(wide_cta_config, 1))
      return make_plan(wide_cta_config, layout, rows, windows, elem_size);
    // A launch of more CTAs than SMs when each row takes `n`: the device is full.
    auto full = [&](std::int64_t n) { return rows * n > limits.sm_count; };
    // Forward, a few rows (decode-time sampling over a vocabulary): where CTAs of 128 threads at
    // 128 bytes a thread (16 KB of the row) hold the row in a cluster, and the launch of them
    // comes to at most two an SM, the most CTAs. On the H200 (median of queued launches, rows
    // 1..64 x cols 16385..128256) they were as fast as or faster than the staged and 256-thread
    // clusters planned below wherever that held (16-bit 50257 columns, rows 32: 6.5 us in 7
    // CTAs against 8.6 in 2 staged ones of 64 KB; fp32 32000, rows 32: 6.05 against 6.56 in 4
    // CTAs of 256 threads), and in fuller launches often slower (16-bit 100000 and 128256
    // columns, rows 32-64; benchmarks/TUNING.md, note 49).
    if (few_forward_rows && ctas(narrow_cluster_config) <= max_cluster)
      return make_plan(narrow_cluster_config, layout, rows, windows, elem_size,
                       static_cast<int>(ctas(narrow_cluster_config)));
    // 16-bit forward: the fewest staged CTAs that hold the row, of 32 KB (16K elements), or,
    // where those do not, of 40, 48 or 64 KB, the smallest that do. Their registers free of row
    // data, an SM runs 6 (5, 4, 3) such CTAs with 192 KB of the row in flight (200, 192, 192),
    // against the register clusters' 3 CTAs with 96 KB,
    // which the two exps an element of packed 16-bit rows had left waiting on the exps. On the
    // H200 (rows*cols = 2^27) 85-93% of copy from 32000 columns on, against 73-93% (151936:
    // 87-88% against 73-74%; 393216 and 524288: 84-85% against 68-74%); 16385: 72-74% against
    // 62-64%. CTAs of 128 threads were slower, and so were CTAs of 128 KB at 2^20 columns (one
    // an SM) than streaming (benchmarks/TUNING.md, notes 29-31).
    //
    // Rows of three 32 KB CTAs of which the third holds at most an eighth of its slots (32769 to
    // 34816 columns, aligned) take two CTAs of 40 KB instead, and rows of four that leave a fifth
    // or more of their slots idle (49153 to 52424; 50257 among them) three of 40 KB: an SM's
    // five CTAs of 40 KB hold 25% more of the former than its six of 32 KB, and 11% more of the
    // latter than six of 32 KB or three of 64 KB (planned for 49153-52424 from 91f1c5c, where
    // they ran 1-4 points faster than four of 32 KB). On the H200 (rows*cols = 2^27, % of
    // copy, two passes each of two probe runs) bf16 32769-34816 columns ran 0.5-3.5 points faster
    // (32769: 92.5% against 91.0-91.2%, 82% in an earlier run; 33280 94.2% against 90.7%), fp16
    // 0.1-2.8 but 34000 and 34816 (-0.8 to +0.8); bf16 49153-52424 0.1-1.3 faster, fp16 0.2-0.8
    // (bf16 50257 91.3-92.1% against 90.9-91.7%); launches of 132 rows within 0.1 us (50257) or
    // 0.6-1.8 us faster (32769), of 396 and 1056 rows 0-2.8 us faster; in the benchmark of the
    // commit that planned them (three passes, the plans before forced beside) bf16 33280 +2.6 to
    // +3.6, 49153 and 50257 +1.3 to +2.3, 32769 +0.1 to +0.9, fp16 -0.5 to +1.0. Rows of three
    // fuller CTAs ran as fast or slower in two of 40 KB (35500 -0.7 to +1.3; 36864, 40960 even;
    // 38000 2.6-2.9 slower), rows of four fuller ones 0.1-0.9 slower in three (53000, 56000;
    // benchmarks/TUNING.md, notes 38, 45, 69).
    //
    // Rows that 16 CTAs of 32 KB do not hold took those of 64 KB; those of 40 and 48 KB, where
    // they hold the row, ran faster on the H200 (bf16, rows*cols = 2^27, % of copy): 262143
    // columns 89.7-90.4% in 13 CTAs of 40 KB against 84.0-84.7% in 9 of 64 KB (fp16 alike),
    // 280000 93.0-93.1 in 14 against 84.5-85.1 in 9 (48 KB: 87.9 in 12), 300000 93.2-93.8 in 15
    // against 84.4-85.0, 327680 93.8-94.6 in 16 against 86.4-86.9; 350000 86.8-87.2 in 15 of
    // 48 KB against 86.6-86.7 in 11, 393216 93.2-94.0 in 16 against 88.9-89.8 in 12; few rows
    // too (262143 x 64: 27.5 us against 31.2; benchmarks/TUNING.md, note 67). Other rows that 16
    // CTAs of 32 KB hold but those above ran as fast in fewer CTAs of 40 KB or slower (57345-196609
    // within 0.6 points; 229377 and 245761 0.6-2 slower; benchmarks/TUNING.md, notes 67, 68).
    if (dir == direction::forward && elem_size == 2 && max_cluster >= 2) {
      const std::int64_t narrow = capacity(staged_config, 1), n32 = ceil_div(windows, narrow);
      const std::int64_t n40 = ceil_div(windows, capacity(staged40_config, 1));
      const bool third_nearly_empty = n32 == 3 && 8 * windows <= 17 * narrow;
      const bool fourth_empty = n32 == 4 && 5 * windows <= 16 * narrow;
      if ((third_nearly_empty || fourth_empty) && n40 <= max_cluster)
        return make_plan(staged40_config, layout, rows, windows, elem_size, static_cast<int>(n40));
      for (int config : {staged_config, staged40_config, staged48_config, wide_staged_config}) {
        const std::int64_t n = ceil_div(windows, capacity(config, 1));
        if (n <= max_cluster)
          return make_plan(config, layout, rows, windows, elem_size, static_cast<int>(n));
      }
    }
    // fp32 forward, rows of 5 to 16 staged CTAs of 32 KB (32769 to 131072 columns, aligned;
    // rows of 4, below) in launches of more than 3 and at most 60 such CTAs an SM: staged as
    // well. An SM runs 6 of them (192 KB of rows in flight) against 2-3 register cluster CTAs
    // (96 KB), so such launches take fewer waves; in full launches the two are within 2% either
    // way. On the H200 (queued medians, aligned rows) 5-17% faster than the register clusters
    // planned below: 128256 columns, rows 32 11.0 us against 12.7, rows 64 21.3 against 24.4, rows
    // 128 36.7 against 40.9; 40000 rows 133 11.5 against 14.0; 100000 rows 64 16.8 against 20.1; at
    // launches of 3 CTAs an SM and fewer within 3% either way. Rows of 2 to 4 such CTAs were
    // slower up to 18% (16384-24577 columns), CTAs of 64 KB slower nearly everywhere
    // (benchmarks/TUNING.md, notes 51, 52).
    //
    // Rows of 4 such CTAs, more than 7/8 full (28673 to 32768 columns, aligned), as well: on the
    // H200 5-10% faster at 100-512 rows, 0.5-1.5% at 1024, within 0.6% either way at 1980
    // (28673-32768 columns); rows of 4 emptier CTAs (24577, 26000 columns, against 7 CTAs of 128
    // threads) up to 12% slower (benchmarks/TUNING.md, note 53).
    if (dir == direction::forward && elem_size == 4 && max_cluster >= 2) {
      const std::int64_t n = ctas(staged_config), launch = rows * n, sms = limits.sm_count;
      const bool full = n >= 5 || (n == 4 && 8 * windows > 7 * n * capacity(staged_config, 1));
      if (full && n <= max_cluster && launch > 3 * sms && launch <= 60 * sms)
        return make_plan(staged_config, layout, rows, windows, elem_size, static_cast<int>(n));
    }
    // The fewest CTAs of 256 threads, or of 128 where that leaves fewer idle slots (a row just
    // above a multiple of 256 threads' registers).
    const bool held = max_cluster >= 2 && windows <= capacity(cluster_config, max_cluster);
    const bool narrow = ctas(narrow_cluster_config) <= max_cluster &&
                        ctas(narrow_cluster_config) * capacity(narrow_cluster_config, 1) <
                            ctas(cluster_config) * capacity(cluster_config, 1);
    const int config = narrow ? narrow_cluster_config : cluster_config;
    // Forward only (fp32 in practice: 16-bit forward is staged above where clusters are), 256
    // bytes a thread: rows those CTAs do not hold, and rows of more than 8 of them in launches
    // of more CTAs than three quarters of the SMs (twice the bytes in flight a thread, at two
    // CTAs an SM instead of three: fp32 at 128256 columns ran at 96% of copy against 89%; rows 8,
    // 6.5 us against 7.0; but rows 5, 80 CTAs of 16 a row, 5.8 against 6.5 in 8), or, where
    // those are CTAs of 128 threads, of more than 8 an SM (fp32 50257 and 60000 columns in 13
    // and 15 of them: rows 24-64 0.1-1.2 us faster than in 4 wide CTAs, rows 128 0.1-0.2 us
    // slower, rows 512 and more 0.1-2.2% slower; benchmarks/TUNING.md, note 49; rows 57-1131 of
    // 50257 and 50-990 of 60000 columns are staged since, above). Backward's two tensors
    // at 256 bytes a thread leave one CTA an SM (fp32 backward at 151936 columns ran at 60% of
    // copy), and streaming keeps such rows on chip at two CTAs an SM (benchmarks/TUNING.md).
    const std::int64_t launch = rows * ctas(config), sms = limits.sm_count;
    const bool wide =
        dir == direction::forward &&
        (!held || (ctas(config) > 8 && (narrow ? launch > 8 * sms : 4 * launch > 3 * sms)));
    // fp32, 288 bytes a thread where that takes the row in fewer CTAs that fill about as much of
    // the device at once (cluster_fill, at most 3% of its slots less), or where 256 bytes a
    // thread do not hold it: the same two CTAs an SM, the row in 8 more registers a thread. On
    // the H200 (rows*cols = 2^27, % of copy, 288 against 256 bytes; cluster_fill in brackets):
    // 163841 columns 94.7% in 9 CTAs [78%] against 85.9% in 11 [67%], 180000 95.0 against 88.2 in
    // 10 [80%] against 11, 212000 91.8 against 88.9 in 12 [73%] against 13 [69%], 131073 95.2
    // against 90.9 in 8 [91%] against 9, 151936 93.9 against 92.7 in 9 against 10 [80%], 65537
    // and 98305 1.5 points faster in 4 and 6 CTAs; 128256 95.4 against 96.0 in 7 [85%] against 8,
    // 196608 90.8 against 91.9 in 11 against 12, 262144 91.6 against 93.0 in 15 [80%] against 16
    // [85%]; 262143 90.8% in 15 against 87.9% streamed, 290000 92.8 in 16 against 83.8. Few rows
    // too: 163841 x 8 12.0 us against 12.8, x 64 35.0 against 36.6 (benchmarks/TUNING.md, note 67).
    if (max_cluster >= 2 && wide) {
      const std::int64_t n = ctas(wide_cluster_config), m = ctas(wide_cluster288_config);
      const bool as_full = n <= max_cluster && cluster_fill(limits, static_cast<int>(m)) + 30 >=
                                                   cluster_fill(limits, static_cast<int>(n));
      if (elem_size == 4 && m <= max_cluster && (n > max_cluster || (m < n && as_full)))
        return make_plan(wide_cluster288_config, layout, rows, windows, elem_size,
                         static_cast<int>(m));
      if (n <= max_cluster)
        return make_plan(wide_cluster_config, layout, rows, windows, elem_size,
                         static_cast<int>(n));
    }
    // 16-bit backward, rows of 11 or 12 such CTAs in launches of more CTAs than SMs: streaming
    // through half as many CTAs, each keeping a tile in registers and one in its stash (read
    // once). On the H200 (bf16, rows*cols = 2^27, the kernels of 9208237, whose clusters read
    // misaligned rows as fast as aligned ones; benchmarks/TUNING.md, note 64) streaming led at 11
    // and 12 CTAs (180216 columns 94.5% of copy against 90.2%, 180225 93.0 against 90.3,
    // 163841 87.6 against 86.2; one row of 12 led the other way, 196599 89.1 against 93.4), the
    // clusters at 9, 10 and 13-15 (131073-146431 columns, misaligned, 92.6-96.2%
    // against 87.3-89.6%; 163831 95.8 against 90.6; 212983 91.1 against 87.3;
    // 229367-245752 95.5-99% against 89.4-94.6%; 147464, aligned, 93.0 against 94.0).
    const std::int64_t n = ctas(cluster_config);
    const bool stream =
        dir == direction::backward && elem_size == 2 && (n == 11 || n == 12) && full(n);
    if (held && !stream)
      return make_plan(config, layout, rows, windows, elem_size, static_cast<int>(ctas(config)));
    // Backward rows those do not hold, but CTAs of 144 bytes a thread do (at the same two CTAs
    // an SM): in a cluster, where they streamed. On the H200 (rows*cols = 2^27, % of copy)
    // bf16 262143 columns ran at 89.8% so against 83.5% streamed, fp16 95.6 against 85, 270000
    // 92 against 90.5, 290000 91.9 against 93.4 (16 CTAs); fp32 131073 100.5 against 89,
    // 134000-147456 101-102 against 97-99; rows 8 and 64 of 131073 fp32 8-9% faster. Where
    // 128-byte CTAs hold the row, the 144-byte ones were slower (bf16 147457, 196609 and 229377
    // columns: 4-9 points in clusters of 9, 11 and 13 CTAs against 10, 13 and 15), and than
    // streaming in the rows of 11 and 12 CTAs above but misaligned 163841 (bf16 170000 and
    // 180000: 89 and 91% against 93.4 and 96%; benchmarks/TUNING.md, note 67).
    if (dir == direction::backward && max_cluster >= 2 && !held &&
        windows <= capacity(cluster144_config, max_cluster))
      return make_plan(cluster144_config, layout, rows, windows, elem_size,
                       static_cast<int>(ctas(cluster144_config)));
  }
  // Longer rows stream, read once where the CTAs of a cluster hold the row in registers and
  // shared memory. Longer still, with a workspace, they are split over many CTAs when that gives
  // a row at least two: 16-bit forward rows staged where the device holds four of them in shared
  // memory (H200, rows*cols = 2^27: 2^20 columns at 72-73% of copy, against 68% split and 65-67%
  // streaming), else split (fp32 forward 600000 to 3M columns: 70-79% against the staged split's
  // 65-73%; 16-bit forward 2^23 and 2^24 columns: 66.5% and 65% against streaming's 55% and 46%;
  // benchmarks/TUNING.md). But forward rows of which streaming reads little twice stream
  // (streams_partly_twice; fp32 2^20 columns streamed at 66-67% against 78% split).
  const plan streaming =
      make_streaming_plan(dir, layout, rows, windows, elem_size, limits, max_cluster);
  const bool streams = reads_once(streaming, dir, elem_size) ||
                       streams_partly_twice(streaming, dir, rows, elem_size, limits);
  //
  // Without a workspace, rows out of place on devices with clusters are split as well, their
  // workspace kept in the output's first row (plan::workspace_in_output), which holds it: the
  // split rows are longer than 16 CTAs hold. On the H200 (rows*cols = 2^27) rows of 2^20-2^24
  // columns ran so at 63-87% of copy, 0-2.5 points below the workspace launchers, streamed at
  // 47-73.5% (16-bit forward 2^20: 71-71.7% against 71.8%; benchmarks/TUNING.md, note 66).
  const bool in_output = !with_workspace && layout.out_of_place && max_cluster >= 2;
  if ((with_workspace || in_output) && !streams) {
    plan p{};
    if (dir == direction::forward && elem_size == 2 && vec > 1 && limits.compute_capability >= 90)
      p = make_staged_split_plan(layout, rows, windows, elem_size, limits);
    if (p.split_ctas < 2) p = make_split_plan(dir, layout, rows, windows, elem_size, limits);
    p.workspace_in_output = in_output;
    if (p.split_ctas >= 2 &&
        (with_workspace || cols * std::int64_t(elem_size) >= p.workspace_bytes + 16))
      return p;
  }
  return streaming;
}

/// `plan_for` with the element size taken from `T` (float, __half or __nv_bfloat16).
template <class T>
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, row_layout layout,
                        device_limits const& limits, bool with_workspace = false) noexcept {
  return plan_for(dir, rows, cols, sizeof(T), layout, limits, with_workspace);
}

/// A one-line description of a plan, e.g. "cluster x16 cta=256 tpr=256 vec=8x8", with
/// " rows=N" for threads that hold N short rows, " tiled" for rows copied through shared memory,
/// " head" for rows that peel a misaligned head, " stash=N" for tiles kept in shared memory,
/// " halves=N" for tiles of which a backward split CTA keeps dy alone there (plan::stash_halves),
/// " hinted" for split CTAs that give L2 hints (detail::hinted_split_config) and
/// " workspace=output" for a split's workspace kept in the output.
inline std::string to_string(plan const& p) {
  const char* algo = p.algo == algorithm::registers   ? "registers"
                     : p.algo == algorithm::cluster   ? "cluster"
                     : p.algo == algorithm::streaming ? "streaming"
                     : p.algo == algorithm::split     ? "split"
                     : p.algo == algorithm::staged    ? "staged"
                                                      : "staged split";
  std::string s = algo;
  if (p.cluster_size > 1) s += " x" + std::to_string(p.cluster_size);
  if (p.algo == algorithm::split || p.algo == algorithm::staged_split)
    s += " " + std::to_string(p.row_groups) + "x" + std::to_string(p.split_ctas) + " ctas";
  s += " cta=" + std::to_string(p.threads_per_cta) + " tpr=" + std::to_string(p.threads_per_row) +
       " vec=" + std::to_string(p.vec) + "x" + std::to_string(p.vecs_per_thread);
  if (p.rows_per_thread > 1) s += " rows=" + std::to_string(p.rows_per_thread);
  if (p.tiled) s += " tiled";
  if (p.shifted) s += " head";
  if (p.stash_tiles > 0) s += " stash=" + std::to_string(p.stash_tiles);
  if (p.stash_halves > 0) s += " halves=" + std::to_string(p.stash_halves);
  if (p.config >= 0 && p.config < detail::num_kernel_configs &&
      detail::kernel_configs[p.config].l2_hints)
    s += " hinted";
  if (p.workspace_in_output) s += " workspace=output";
  return s;
}

}  // namespace rowsoftmax
