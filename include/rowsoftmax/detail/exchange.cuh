// SPDX-License-Identifier: Apache-2.0
// The one cross-thread exchange of a row: every thread brings its partial, every thread of the
// row leaves with the row's total. Lanes reduce by butterfly shuffles (online: the max, then
// the rescaled sums); warps of one CTA through shared memory and one __syncthreads; CTAs of a
// cluster (sm_90) by each warp broadcasting its 8-byte partial into every peer's shared memory
// with st.async, counted by the peer's mbarrier.
#pragma once

#include <cooperative_groups.h>
#include <cuda/ptx>

#include <cstdint>
#include <type_traits>

#include "../plan.hpp"
#include "math.cuh"

namespace rowsoftmax::detail {

/// The total of each group of `Lanes` consecutive lanes, in every lane of the group, bitwise
/// the same in each (every step adds or maxes the same two values, in either order, without
/// contraction). Online (max, sum): the max first, then each lane's sum rescaled to it once and
/// the sums added: one exp a lane, where combining pairs would take two a step. Sums: the sums
/// only.
template <class Reduce, int Lanes>
__device__ inline partial butterfly(partial p) {
  if constexpr (std::is_same_v<Reduce, online_reduce>) {
    float m = p.m;
#pragma unroll
    for (int o = Lanes / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = rescaled(p.s, p.m, safe_shift(m));
#pragma unroll
    for (int o = Lanes / 2; o > 0; o /= 2) s = add_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
    return {m, s};
  } else {
    static_assert(std::is_same_v<Reduce, sum_reduce>);
    float s = p.s;
#pragma unroll
    for (int o = Lanes / 2; o > 0; o /= 2) s = add_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
    return {0.0f, s};
  }
}

/// Reduction of one row. `Lanes` < 32: the row's threads are that many consecutive lanes of
/// a warp (shuffles only). `Lanes` == 32: the row is `warps` whole warps of a CTA of at most
/// `MaxCtaThreads` threads and, with `Clustered`, spread over the `ctas` CTAs of a cluster (then
/// one row per CTA); both counts are chosen per launch.
template <class Reduce, int Lanes, int MaxCtaThreads, bool Clustered>
struct row_exchange {
  static_assert(Lanes >= 1 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "lanes: a power of two");
  static_assert(Lanes == 32 || !Clustered, "a cluster shares rows of whole warps");
  static constexpr int max_slots = MaxCtaThreads / 32 * (Clustered ? max_cluster_size : 1);
  using reduce = Reduce;

  struct storage {
    partial slot[max_slots];  // the CTA's rows' partials, one per warp of each row
    std::uint64_t bar;        // cluster only: counts the bytes of the peers' partials
  };

  /// Call once at kernel start, before the global loads, with the warps of a row and the CTAs
  /// of the cluster. For a cluster: arms this CTA's mbarrier for the partials it will receive,
  /// then a relaxed cluster arrive whose matching wait (in `allreduce`) comes after the loads,
  /// so its latency hides behind memory.
  __device__ static void begin(storage& smem, int warps, int ctas) {
    if constexpr (Clustered) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
      __trap();
#else
      if (threadIdx.x == 0) {
        cuda::ptx::mbarrier_init(&smem.bar, 1);
        cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
        cuda::ptx::mbarrier_arrive_expect_tx(
            cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &smem.bar,
            static_cast<std::uint32_t>(warps * ctas * sizeof(partial)));
      }
      cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
    } else {
      (void)smem, (void)warps, (void)ctas;
    }
  }

  /// The row's total from every thread's partial; all threads of the CTA must call it with
  /// the same counts as `begin`. Every thread of the row (in every CTA of the cluster) gets the
  /// bitwise same result.
  __device__ static partial allreduce(partial p, storage& smem, int warps, int ctas) {
    p = butterfly<Reduce, Lanes>(p);
    if constexpr (Lanes < 32) {
      (void)smem, (void)warps, (void)ctas;
      return p;
    } else {
      const int used = warps * ctas;  // partials to combine, the same in every CTA
      if (used == 1) return p;
      const int lane = threadIdx.x % 32;
      const int warp = threadIdx.x / 32;
      partial* slots = smem.slot + (warp / warps) * used;  // this warp's row
      const int w = warp % warps;
      if constexpr (!Clustered) {
        if (lane == 0) slots[w] = p;
        __syncthreads();
      } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
        __trap();
#else
        namespace cg = cooperative_groups;
        cg::cluster_group cta_cluster = cg::this_cluster();
        const int rank = static_cast<int>(cta_cluster.block_rank());
        cuda::ptx::barrier_cluster_wait();  // every peer's mbarrier is initialized
        if (lane < ctas) {
          partial* dst = cta_cluster.map_shared_rank(&slots[rank * warps + w], lane);
          std::uint64_t* bar = cta_cluster.map_shared_rank(&smem.bar, lane);
          cuda::ptx::st_async(dst, p, bar);
        }
        while (!cuda::ptx::mbarrier_try_wait_parity(&smem.bar, 0)) {
        }
#endif
      }
      // Lane-parallel fold of the row's partials (lane i: slots i, i + 32, ...; identity where
      // none), then a butterfly over the warp. The same order in every warp and every CTA,
      // and combine is commutative bit for bit, hence the same bits everywhere.
      partial q = Reduce::identity();
      for (int i = lane; i < used; i += 32) q = Reduce::combine(q, slots[i]);
      return butterfly<Reduce, 32>(q);
    }
  }
};

}  // namespace rowsoftmax::detail
