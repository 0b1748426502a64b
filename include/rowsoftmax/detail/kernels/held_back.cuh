// SPDX-License-Identifier: Apache-2.0
// After a split or staged split launch whose workspace lies in the output: the windows of row 0
// that the workspace covered, stored once the split kernel has read its workspace.
#pragma once

#include <nv/target>

#include <cstdint>

#include "../math.cuh"
#include "../row_io.cuh"
#include "kernel_shape.cuh"
#include "staged_share.cuh"
#include "tile_share.cuh"
#include "workspace_meeting.cuh"

namespace rowsoftmax::detail {

/// Waits until the grid this one depends on has completed and its memory operations are
/// visible (a launch with programmatic stream serialization, sm_90: the grid may start before).
__device__ inline void wait_for_prior_grid() {
  NV_IF_TARGET(NV_PROVIDES_SM_90, (asm volatile("griddepcontrol.wait;" ::: "memory");))
}

/// After a split or staged split launch whose workspace is in the output
/// (split_workspace::skip_windows > 0), one CTA: the windows of row 0 that the workspace covers,
/// which the split kernels left, read again and stored given row 0's total, as those kernels
/// store them; the total gathered from group 0's first meeting as its CTAs gathered it (so all
/// bitwise the same), before any of the workspace is overwritten. Launched to start while the
/// split kernel ends (programmatic stream serialization), it loads its first input windows (which
/// the split kernel does not write) before it waits for that kernel. A kernel of its own: stored
/// by the split kernel, these windows or row 0's total spill its row state (ptxas, sm_90).
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta, 1)
    held_back_kernel(typename Op::args const args, split_workspace const ws) {
  using shape = kernel_shape<Op, V, Config>;
  constexpr int threads = shape::threads_per_cta;
  __shared__ typename shape::exchange::storage smem;
  constexpr bool all_threads = kernel_configs[Config].algo == algorithm::split;
  auto total_of_row_0 = [&] {
    wait_for_prior_grid();
    const partial total = gather<typename shape::exchange, threads, all_threads>(
        meeting_slots(ws, 0, 0), ws.split_ctas, 1, smem);
    __syncthreads();  // every thread has the total before the workspace is overwritten
    return total;
  };
  if constexpr (kernel_configs[Config].algo == algorithm::staged_split) {
    // Each share's held-back windows, 8 a thread at a time; row 0's total once, after the
    // first loads.
    partial total{};
    bool gathered = false;
    for (int rank = 0; rank * ws.share < ws.skip_windows; ++rank)
      staged_share<Op, V, Config>(args, 0, rank, ws.share, ws.skip_windows)
          .template store_held_back<8>([&] {
            if (!gathered) total = total_of_row_0();
            gathered = true;
            return total;
          });
  } else {
    // Tiles, as tile_share stores them.
    using share = tile_share<Op, V, Config>;
    typename share::fragment frag;
    Op::load(args, Op::template window<V>(args, 0, threadIdx.x, share::threads), frag);
    const partial total = total_of_row_0();
    for (std::int64_t t = 0; t * share::tile < ws.skip_windows; ++t) {
      const row_window window =
          Op::template window<V>(args, 0, t * share::tile + threadIdx.x, share::threads);
      if (t > 0) Op::load(args, window, frag);
      Op::fold(frag);
      Op::template store<true>(args, window, frag, total);
    }
  }
}

}  // namespace rowsoftmax::detail
