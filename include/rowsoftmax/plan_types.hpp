// SPDX-License-Identifier: Apache-2.0
// Host-only: the public types of a plan (what the planner is told about a call and a device,
// and what it returns). Plain data, so plans are computed and tested on machines without a GPU.
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
  int config = 0;  ///< the kernel configuration: an index into detail::kernel_configs, named in
                   ///< detail::configs (the dispatch switch's key)
  int vec = 1;     ///< elements per vector access
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

/// Plans are equal when every field is.
constexpr bool operator==(plan const& a, plan const& b) noexcept {
  return a.algo == b.algo && a.config == b.config && a.vec == b.vec && a.shifted == b.shifted &&
         a.threads_per_row == b.threads_per_row && a.vecs_per_thread == b.vecs_per_thread &&
         a.rows_per_thread == b.rows_per_thread && a.tiled == b.tiled &&
         a.rows_per_cta == b.rows_per_cta && a.threads_per_cta == b.threads_per_cta &&
         a.cluster_size == b.cluster_size && a.windows == b.windows && a.grid_ctas == b.grid_ctas &&
         a.split_ctas == b.split_ctas && a.row_groups == b.row_groups &&
         a.stash_tiles == b.stash_tiles && a.stash_halves == b.stash_halves &&
         a.workspace_bytes == b.workspace_bytes && a.workspace_in_output == b.workspace_in_output;
}
constexpr bool operator!=(plan const& a, plan const& b) noexcept {
  return !(a == b);
}

}  // namespace rowsoftmax
