// SPDX-License-Identifier: Apache-2.0
// A CTA's place in a one-dimensional grid of clusters (sm_90; before it, every CTA is its own
// cluster): what a cluster configuration's kernel is told of its clusters, its rank and its
// cluster's index.
#pragma once

#include <cuda/ptx>

#include <nv/target>

#include "../math.cuh"
#include "kernel_shape.cuh"

namespace rowsoftmax::detail {

/// What a kernel of a cluster configuration (register cluster, streaming, staged) is told of its
/// clusters, CTAs along x.
struct cluster_arg {
  int size;                   ///< CTAs a cluster (1: none)
  int share;                  ///< register cluster, staged: windows of a row a CTA holds
                              ///< (share_windows)
  exact_divisor per_cluster;  ///< `size`, to divide blockIdx.x by
};

/// A CTA's rank in its cluster, and the cluster's index in the one-dimensional grid of clusters,
/// without a division: the rank from its special register, the index an exact division by the
/// cluster size (exact_divisor). A division out of blockIdx.x, or %clusterid.x, waits for the
/// SM's special-function unit before the CTA issues its loads (tuning log, register clusters).
__device__ inline int cluster_rank() {
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90,
                    (return static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());), (return 0;))
}
__device__ inline unsigned cluster_index(cluster_arg const& clusters) {
  return clusters.per_cluster.divide(blockIdx.x - static_cast<unsigned>(cluster_rank()));
}

/// An empty kernel, launched by no one: the occupancy of its clusters at two CTAs an SM is the
/// device's (query_cluster_fill, dispatch.cuh).
template <int MaxThreads>
ROWSOFTMAX_KERNEL void __launch_bounds__(MaxThreads) cluster_fill_kernel() {}

}  // namespace rowsoftmax::detail
