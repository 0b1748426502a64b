// SPDX-License-Identifier: Apache-2.0
// The split tier: a row's tiles shared by many CTAs that meet through a workspace, each CTA
// keeping its share on chip between the passes where it fits (see tile_share).
#pragma once

#include <cstdint>

#include "../math.cuh"
#include "../row_io.cuh"
#include "kernel_shape.cuh"
#include "tile_share.cuh"
#include "workspace_meeting.cuh"

namespace rowsoftmax::detail {

/// A split group's rows in turn, each in three steps: the CTA's share loaded into a partial,
/// the meeting, its stores (backward, and the scalar fallback).
template <class Op, int V, int Config>
__device__ inline void split_rows_in_turn(
    typename Op::args const& args, split_workspace const& ws, int group, int rank,
    typename kernel_shape<Op, V, Config>::exchange::storage& smem, uint4* stashed) {
  using shape = kernel_shape<Op, V, Config>;
  using share = tile_share<Op, V, Config>;
  typename shape::fragment frag;
  int iteration = 0;
  for (std::int64_t row = group; row < args.rows; row += ws.row_groups, ++iteration) {
    row_window window = Op::template window<V>(args, row, 0, share::threads);
    const std::int64_t tiles = share::tiles(window);
    const std::int64_t first_tile = share::first(tiles, rank, ws.split_ctas);
    const std::int64_t end_tile = share::first(tiles, rank + 1, ws.split_ctas);

    partial acc = share::template load<true>(args, window, first_tile, end_tile, ws.stash_tiles,
                                             ws.stash_halves, frag, stashed);
    acc = shape::exchange::allreduce(acc, smem, shape::warps_per_row, 1);

    const partial total = meet<typename shape::exchange, shape::threads_per_cta, true>(
        ws, group, rank, iteration, acc, smem);
    share::template store<true, true>(args, window, first_tile, end_tile, ws.stash_tiles,
                                      ws.stash_halves, frag, stashed, total,
                                      row == 0 ? ws.skip_windows : 0);
    __syncthreads();  // the exchange's slots are rewritten by the next row
  }
}

/// Rows split over `split_ctas` CTAs each, `row_groups` rows in flight; all CTAs of the launch
/// are resident at once (a cooperative launch), so a CTA may wait for the others of its group.
/// Group g (blockIdx.y) takes rows g, g + row_groups, ...; CTA r of a group (blockIdx.x) reads
/// its share of the row's tiles into a partial (keeping what fits on chip, see tile_share),
/// publishes the partial, waits for the group's others, combines them in the same order as every
/// other CTA, then stores its tiles (forward: in one pass with the loads of its share of the
/// group's next row, see tile_share::pass; backward rows run slower so, and the scalar fallback
/// spills, tuning log, split rows). The grid's two dimensions give the group and rank as special
/// registers, read again where needed: kept in registers, they spill the fp32 forward kernel at
/// its register bound (tuning log, split rows).
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    split_kernel(typename Op::args const args, split_workspace const ws) {
  using shape = kernel_shape<Op, V, Config>;
  __shared__ typename shape::exchange::storage smem;
  extern __shared__ uint4 stashed[];

  const int group = static_cast<int>(blockIdx.y);
  const int rank = static_cast<int>(blockIdx.x);
  if constexpr (Op::dir == direction::backward || V == 1) {
    split_rows_in_turn<Op, V, Config>(args, ws, group, rank, smem, stashed);
  } else {
    // Pipelined: pass k stores row k - 1 of the group (none at first) and loads row k (none
    // after the last), see tile_share::pass; then row k's meeting.
    using share = tile_share<Op, V, Config>;
    typename shape::fragment frag;
    // The CTA's share of `row`: its first tile, and its tile count returned.
    auto share_of = [&](std::int64_t row, std::int64_t& first_tile) {
      const std::int64_t tiles =
          row < args.rows ? share::tiles(Op::template window<V>(args, row, 0, share::threads)) : 0;
      first_tile = share::first(tiles, rank, ws.split_ctas);
      return static_cast<int>(share::first(tiles, rank + 1, ws.split_ctas) - first_tile);
    };
    std::int64_t row = group, next_row = group, first_tile = 0, next_first_tile;
    int tiles = 0;
    partial total = Op::reduce::identity();
    for (int iteration = 0;; ++iteration) {
      const int next_tiles = share_of(next_row, next_first_tile);
      partial acc = share::template pass<true>(args, row, first_tile, tiles, next_row,
                                               next_first_tile, next_tiles, ws.stash_tiles, frag,
                                               stashed, total, ws.skip_windows);
      if (next_row >= args.rows) break;
      row = next_row;
      next_row += ws.row_groups;
      first_tile = next_first_tile;
      tiles = next_tiles;
      __syncthreads();  // the exchange's slots: the previous meeting read them
      acc = shape::exchange::allreduce(acc, smem, shape::warps_per_row, 1);
      total = meet<typename shape::exchange, shape::threads_per_cta, true>(ws, group, rank,
                                                                           iteration, acc, smem);
    }
  }
}

}  // namespace rowsoftmax::detail
