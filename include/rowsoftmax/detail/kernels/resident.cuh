// SPDX-License-Identifier: Apache-2.0
// The register tier: a row (or several) held in registers, read once, reduced in one exchange
// and stored; in a clustered configuration the row spans the CTAs of a cluster (sm_90).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../math.cuh"
#include "../row_io.cuh"
#include "cluster_grid.cuh"
#include "kernel_shape.cuh"

namespace rowsoftmax::detail {

/// The rows a CTA holds in registers, `Shape::rows_per_thread` of them a thread: every row's
/// loads issued first, then each row reduced (one exchange) and stored. `window(j)` is the
/// thread's window of its row j (the same for its loads, their finish and its store); `where`
/// says where the rows are (no_hint: global memory, in_tile: a shared-memory tile, every thread
/// of the CTA calling).
template <class Op, class Shape, class Window, class Where = no_hint>
__device__ inline void hold_rows(typename Op::args const& args, Window const& window,
                                 typename Shape::exchange::storage& smem, int cluster,
                                 Where where = {}) {
  constexpr int rows = Shape::rows_per_thread;
  typename Shape::fragment frags[rows];
#pragma unroll
  for (int j = 0; j < rows; ++j) Op::issue(args, window(j), frags[j], where);
#pragma unroll
  for (int j = 0; j < rows; ++j) Op::finish(args, window(j), frags[j], where);
  // A tile's rows are written in place, and a window read there covers words of the next row
  // (its elements masked): every read done before any write.
  if constexpr (std::is_same_v<Where, in_tile>) __syncthreads();
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const partial total =
        Shape::exchange::allreduce(Op::fold(frags[j]), smem, Shape::warps_per_row, cluster);
    Op::store(args, window(j), frags[j], total, where);
  }
}

/// Rows held in registers (see hold_rows): `rows_per_thread` rows a thread of a CTA, or one row
/// over the CTAs of a cluster, each CTA holding an equal share of its windows.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    resident_kernel(typename Op::args const args, cluster_arg const clusters) {
  using shape = kernel_shape<Op, V, Config>;
  constexpr int threads_per_row = shape::threads_per_row;
  const int cluster = shape::config.clustered ? clusters.size : 1;
  __shared__ typename shape::exchange::storage smem;
  shape::exchange::begin(smem, shape::warps_per_row, cluster);

  // Row j of the thread (several for short rows): rows_per_pass consecutive rows a CTA for each
  // j, so that a warp's accesses to its j-th rows are contiguous where the rows are.
  constexpr int rows = shape::rows_per_thread;
  constexpr int rows_per_pass = shape::threads_per_cta / threads_per_row;
  const int cta_rank = shape::config.clustered ? cluster_rank() : 0;
  const std::int64_t first_row =
      std::int64_t{shape::config.clustered ? cluster_index(clusters) : blockIdx.x} * rows_per_pass *
          rows +
      threadIdx.x / threads_per_row;
  // The thread's window of its row j: one expression for its loads, their finish and its store.
  auto window = [&](int j) {
    row_window w = Op::template window<V>(args, first_row + j * rows_per_pass,
                                          threadIdx.x % threads_per_row, threads_per_row);
    if constexpr (shape::config.clustered) {
      // Equal shares: CTA r owns windows [r * n, (r + 1) * n), n = clusters.share the widest
      // row's windows over the CTAs (share_windows), so every CTA is equally busy.
      w.first += std::int64_t{cta_rank} * clusters.share;
      const std::int64_t end = std::int64_t{cta_rank + 1} * clusters.share * V - w.shift;
      w.cols = end < w.cols ? end : w.cols;
    }
    return w;
  };
  hold_rows<Op, shape>(args, window, smem, cluster);
}

}  // namespace rowsoftmax::detail
