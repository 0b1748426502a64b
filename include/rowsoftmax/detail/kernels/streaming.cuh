// SPDX-License-Identifier: Apache-2.0
// The streaming tier: rows longer than the registers of a cluster, one row a CTA or a cluster,
// read in tiles in two passes around one exchange.
#pragma once

#include <cstdint>

#include "../math.cuh"
#include "../row_io.cuh"
#include "cluster_grid.cuh"
#include "kernel_shape.cuh"
#include "tile_share.cuh"

namespace rowsoftmax::detail {

/// Pass 1 streams the CTA's share of the row in tiles into a partial, keeping what fits on chip
/// (the last tile in registers, `stash_tiles` whole tiles and `stash_halves` half tiles in
/// shared memory); one exchange over the CTA or cluster; pass 2 stores the tiles, reading again
/// those not kept (see tile_share).
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    streaming_kernel(typename Op::args const args, cluster_arg const clusters,
                     int const stash_tiles, int const stash_halves) {
  using shape = kernel_shape<Op, V, Config>;
  using share = tile_share<Op, V, Config>;
  const int cluster = shape::config.clustered ? clusters.size : 1;
  __shared__ typename shape::exchange::storage smem;
  extern __shared__ uint4 stashed[];
  shape::exchange::begin(smem, shape::warps_per_row, cluster);

  const int cta_rank = shape::config.clustered ? cluster_rank() : 0;
  row_window window = Op::template window<V>(
      args, std::int64_t{shape::config.clustered ? cluster_index(clusters) : blockIdx.x}, 0,
      share::threads);
  const std::int64_t tiles = share::tiles(window);
  const std::int64_t first_tile = share::first(tiles, cta_rank, cluster);
  const std::int64_t end_tile = share::first(tiles, cta_rank + 1, cluster);

  typename shape::fragment frag;
  const partial acc = share::template load<false>(args, window, first_tile, end_tile, stash_tiles,
                                                  stash_halves, frag, stashed);
  const partial total = shape::exchange::allreduce(acc, smem, shape::warps_per_row, cluster);
  share::template store<false, false>(args, window, first_tile, end_tile, stash_tiles, stash_halves,
                                      frag, stashed, total);
}

}  // namespace rowsoftmax::detail
