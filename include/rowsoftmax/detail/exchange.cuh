// SPDX-License-Identifier: Apache-2.0
// The one cross-thread exchange of a row: every thread brings its partial, every thread of the
// row leaves with the row's total. Lanes reduce by butterfly shuffles; warps of one CTA through
// shared memory and one __syncthreads; CTAs of a cluster (sm_90) by each warp broadcasting its
// 8-byte partial into every peer's shared memory with st.async, counted by the peer's mbarrier.
#pragma once

#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>

#include "math.cuh"

namespace rowsoftmax::detail {

template <class Reduce>
__device__ inline partial shfl_combine(partial p, int offset) {
  const partial q{__shfl_xor_sync(0xffffffffu, p.m, offset),
                  __shfl_xor_sync(0xffffffffu, p.s, offset)};
  return Reduce::combine(p, q);
}

/// Reduction of one row whose `ThreadsPerRow` threads sit in consecutive lanes of a CTA of
/// `CtaThreads` threads, the row spread over `ClusterSize` CTAs (then one row per CTA).
template <class Reduce, int ThreadsPerRow, int CtaThreads, int ClusterSize>
struct row_exchange {
  static_assert((ThreadsPerRow & (ThreadsPerRow - 1)) == 0, "threads per row: a power of two");
  static_assert(CtaThreads % ThreadsPerRow == 0 && CtaThreads % 32 == 0, "whole rows, warps");
  static_assert(ClusterSize == 1 || ThreadsPerRow == CtaThreads, "a cluster shares one row");
  static_assert(ClusterSize >= 1 && ClusterSize <= 16 && (ClusterSize & (ClusterSize - 1)) == 0);

  static constexpr int lanes = ThreadsPerRow < 32 ? ThreadsPerRow : 32;
  static constexpr int warps_per_row = ThreadsPerRow / lanes;
  static constexpr int rows_per_cta = CtaThreads / ThreadsPerRow;
  static constexpr int slots_per_row = warps_per_row * ClusterSize;  // partials to combine
  static_assert((slots_per_row & (slots_per_row - 1)) == 0, "lane groups need a power of two");
  static constexpr bool cluster = ClusterSize > 1;

  struct storage {
    partial slot[rows_per_cta][slots_per_row];
    std::uint64_t bar;  // cluster only: counts the bytes of the peers' partials
  };

  /// Call once at kernel start, before the global loads. For a cluster: arms this CTA's
  /// mbarrier for the partials it will receive, then a relaxed cluster arrive whose matching
  /// wait (in `allreduce`) comes after the loads, so its latency hides behind memory.
  __device__ static void begin(storage& smem) {
    if constexpr (cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
      __trap();
#else
      if (threadIdx.x == 0) {
        cuda::ptx::mbarrier_init(&smem.bar, 1);
        cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                             cuda::ptx::space_shared, &smem.bar,
                                             slots_per_row * sizeof(partial));
      }
      cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
    }
  }

  /// The row's total from every thread's partial; all threads of the CTA must call it.
  /// Every thread of the row (in every CTA of the cluster) gets the bitwise same result.
  __device__ static partial allreduce(partial p, storage& smem) {
#pragma unroll
    for (int o = lanes / 2; o > 0; o /= 2) p = shfl_combine<Reduce>(p, o);
    if constexpr (slots_per_row == 1) {
      return p;
    } else {
      const int lane = threadIdx.x % 32;
      const int warp = threadIdx.x / 32;
      const int row = warp / warps_per_row;
      const int w = warp % warps_per_row;
      if constexpr (!cluster) {
        if (lane == 0) smem.slot[row][w] = p;
        __syncthreads();
      } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
        __trap();
#else
        namespace cg = cooperative_groups;
        cg::cluster_group cta_cluster = cg::this_cluster();
        const int rank = static_cast<int>(cta_cluster.block_rank());
        cuda::ptx::barrier_cluster_wait();  // every peer's mbarrier is initialized
        if (lane < ClusterSize) {
          partial* dst = cta_cluster.map_shared_rank(&smem.slot[0][rank * warps_per_row + w], lane);
          std::uint64_t* bar = cta_cluster.map_shared_rank(&smem.bar, lane);
          cuda::ptx::st_async(dst, p, bar);
        }
        while (!cuda::ptx::mbarrier_try_wait_parity(&smem.bar, 0)) {
        }
#endif
      }
      // Lane-parallel fold of the row's partials, then a butterfly. With fewer slots than
      // lanes, each aligned group of `spread` lanes holds every slot once, so the butterfly
      // over that group leaves the total in every lane. The same order in every warp and every
      // CTA, hence the same bits.
      constexpr int spread = slots_per_row < 32 ? slots_per_row : 32;
      partial q = Reduce::identity();
#pragma unroll
      for (int i = lane % spread; i < slots_per_row; i += 32)
        q = Reduce::combine(q, smem.slot[row][i]);
#pragma unroll
      for (int o = spread / 2; o > 0; o /= 2) q = shfl_combine<Reduce>(q, o);
      return q;
    }
  }
};

}  // namespace rowsoftmax::detail
