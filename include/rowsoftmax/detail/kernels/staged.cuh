// SPDX-License-Identifier: Apache-2.0
// The staged tier (forward, sm_90): a row copied into the shared memory of a cluster's CTAs, or
// of many CTAs that meet through a workspace, reduced and normalized from there.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "../exchange.cuh"
#include "../math.cuh"
#include "cluster_grid.cuh"
#include "kernel_shape.cuh"
#include "staged_share.cuh"
#include "workspace_meeting.cuh"

namespace rowsoftmax::detail {

/// Forward rows in shared memory, one a cluster (see staged_share): the CTAs stage their
/// shares, exchange once and store.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    staged_kernel(typename Op::args const args, cluster_arg const clusters) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  (void)args, (void)clusters;
  __trap();
#else
  using shape = kernel_shape<Op, V, Config>;
  using share = staged_share<Op, V, Config>;
  // A cluster of one CTA (16-bit rows of one CTA, plan_for) exchanges as a CTA does: st.async
  // into a cluster of one is refused by compute-sanitizer memcheck ("Cluster needs to have at
  // least 2 blocks").
  using cta_exchange = row_exchange<typename Op::reduce, 32, shape::threads_per_cta, false>;
  __shared__ union {
    typename shape::exchange::storage cluster;
    typename cta_exchange::storage cta;
  } smem;
  __shared__ std::uint64_t landed[2];
  extern __shared__ uint4 staged[];
  shape::exchange::begin(smem.cluster, shape::warps_per_row, clusters.size);

  // One row a cluster, a share of it a CTA (see cluster_index).
  const share row_share(args, std::int64_t{cluster_index(clusters)}, cluster_rank(),
                        clusters.share);
  row_share.start(staged, landed);
  __syncthreads();  // the mbarriers are initialized

  const partial part = row_share.fold(staged, landed, 0);
  partial total;
  if (clusters.size > 1) {
    total = shape::exchange::allreduce(part, smem.cluster, shape::warps_per_row, clusters.size);
  } else {
    cuda::ptx::barrier_cluster_wait();  // begin's arrive; its mbarrier is left armed, unused
    total = cta_exchange::allreduce(part, smem.cta, shape::warps_per_row, 1);
  }
  row_share.template store<0, share::slots>(staged, total);
#endif
}

/// Forward rows staged (see staged_share) over `split_ctas` CTAs each, `row_groups` rows in
/// flight, all CTAs resident at once (a cooperative launch), meeting once a row through the
/// workspace (see meet). Group g takes rows g, g + row_groups, ...; the next row's first half
/// is copied in while the second half of this one is stored.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    staged_split_kernel(typename Op::args const args, split_workspace const ws) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  (void)args, (void)ws;
  __trap();
#else
  using shape = kernel_shape<Op, V, Config>;
  using share = staged_share<Op, V, Config>;
  __shared__ typename shape::exchange::storage smem;
  __shared__ std::uint64_t landed[2];
  extern __shared__ uint4 staged[];

  const int group = static_cast<int>(blockIdx.x) / ws.split_ctas;
  const int rank = static_cast<int>(blockIdx.x) % ws.split_ctas;
  share this_row(args, group, rank, ws.share, ws.skip_windows);
  this_row.start(staged, landed);
  __syncthreads();  // the mbarriers are initialized

  int iteration = 0;
  for (std::int64_t row = group; row < args.rows; row += ws.row_groups, ++iteration) {
    const partial acc = shape::exchange::allreduce(this_row.fold(staged, landed, iteration & 1),
                                                   smem, shape::warps_per_row, 1);
    const partial total = meet<typename shape::exchange, shape::threads_per_cta, false>(
        ws, group, rank, iteration, acc, smem);
    const std::int64_t next = row + ws.row_groups;
    const share next_row(args, next < args.rows ? next : row, rank, ws.share);
    // Each half is rewritten by the next row's copy once every thread has read it: a proxy
    // fence orders this thread's shared-memory accesses before the copy's (async proxy).
    this_row.template store<0, share::half>(staged, total);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    __syncthreads();
    if (threadIdx.x == 0 && next < args.rows) next_row.issue(0, staged, landed);
    this_row.template store<share::half, share::slots>(staged, total);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    __syncthreads();  // also: the exchange's slots are rewritten by the next row
    if (next < args.rows) {
      if (threadIdx.x == 0) next_row.issue(1, staged, landed);
      next_row.edges(staged);
    }
    this_row = next_row;
  }
#endif
}

}  // namespace rowsoftmax::detail
