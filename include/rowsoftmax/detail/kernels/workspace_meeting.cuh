// SPDX-License-Identifier: Apache-2.0
// Where the CTAs of a split launch meet once a row: the workspace (an arrival counter and tagged
// partials a row group), publishing a CTA's partial, waiting for the group and gathering the
// row's total, bitwise the same in every CTA.
#pragma once

#include <cuda/atomic>

#include <cstdint>

#include "../../plan.hpp"
#include "../exchange.cuh"
#include "../math.cuh"
#include "../vec.cuh"

namespace rowsoftmax::detail {

/// A CTA's partial in a split workspace: each float in the low half of a word of 8 bytes whose
/// high half is the tag of the meeting that wrote it (its iteration + 1; the launcher zeroes the
/// workspace), so that a reader that sees the tag sees the float with it (one single-copy atomic
/// access), with no fence between the partial and its arrival.
struct tagged_partial {
  std::uint64_t m;
  std::uint64_t s;
};

/// Where the CTAs of a split launch meet: per row group, an arrival counter (zero before the
/// launch) and three sets of partials, one per CTA of the group (see meeting_slots).
struct split_workspace {
  unsigned* counters;
  tagged_partial* partials;
  int row_groups;
  int split_ctas;
  int stash_tiles;   ///< tiles a CTA keeps in its dynamic shared memory
  int share;         ///< staged split: windows of a row each CTA holds (see share_windows)
  int skip_windows;  ///< the workspace in the output (plan::workspace_in_output): windows of
                     ///< row 0 it covers, which the split kernels leave to held_back_kernel;
                     ///< else 0
  int stash_halves;  ///< backward: tiles of which a CTA keeps dy alone in its dynamic shared
                     ///< memory, after its `stash_tiles` (plan::stash_halves)
};

using workspace_word = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>;

/// Partial `i` at `slots`, given its words `m` and `s` as first read, each read again until it
/// carries `tag`, folded into `acc`.
template <class Reduce>
__device__ inline partial fold_tagged(partial acc, tagged_partial* slots, int i, std::uint32_t tag,
                                      std::uint64_t m, std::uint64_t s) {
  while ((m >> 32) != tag) m = workspace_word(slots[i].m).load(cuda::memory_order_relaxed);
  while ((s >> 32) != tag) s = workspace_word(slots[i].s).load(cuda::memory_order_relaxed);
  return Reduce::combine(acc, partial{bits_as<float>(static_cast<std::uint32_t>(m)),
                                      bits_as<float>(static_cast<std::uint32_t>(s))});
}

/// `gather` by every thread: each reads a partial or two, the CTA reduces them through
/// `Exchange`.
template <class Exchange, int Threads>
__device__ inline partial gather_by_all(tagged_partial* slots, int count, std::uint32_t tag,
                                        typename Exchange::storage& smem) {
  using reduce = typename Exchange::reduce;
  partial acc = reduce::identity();
  for (int i = static_cast<int>(threadIdx.x); i < count; i += Threads)
    acc = fold_tagged<reduce>(acc, slots, i, tag,
                              workspace_word(slots[i].m).load(cuda::memory_order_relaxed),
                              workspace_word(slots[i].s).load(cuda::memory_order_relaxed));
  return Exchange::allreduce(acc, smem, Threads / 32, 1);
}

/// `gather` by the fewest warps that read four partials a lane: they fold them, and every
/// thread folds those warps' partials from `smem`, which holds them until the caller's next
/// __syncthreads.
template <class Exchange, int Threads>
__device__ inline partial gather_by_warps(tagged_partial* slots, int count, std::uint32_t tag,
                                          typename Exchange::storage& smem) {
  using reduce = typename Exchange::reduce;
  partial acc = reduce::identity();
  constexpr int batch = 4;  // partials a lane reads at once
  const int warps = min(static_cast<int>(ceil_div(count, 32 * batch)), Threads / 32);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (warp < warps) {
    for (int i0 = warp * 32 * batch + lane; i0 < count; i0 += warps * 32 * batch) {
      std::uint64_t m[batch], s[batch];
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        const int i = i0 + k * 32;
        m[k] = i < count ? workspace_word(slots[i].m).load(cuda::memory_order_relaxed) : 0;
        s[k] = i < count ? workspace_word(slots[i].s).load(cuda::memory_order_relaxed) : 0;
      }
#pragma unroll
      for (int k = 0; k < batch; ++k)
        if (i0 + k * 32 < count)
          acc = fold_tagged<reduce>(acc, slots, i0 + k * 32, tag, m[k], s[k]);
    }
    acc = butterfly<reduce, 32>(acc);
    if (lane == 0) smem.slot[warp] = acc;
  }
  __syncthreads();
  partial total = reduce::identity();
  for (int w = 0; w < warps; ++w) total = reduce::combine(total, smem.slot[w]);
  return total;
}

/// The partials of a split group's meeting (`count` of them at `slots`, tagged `tag`: see
/// tagged_partial) folded in the same order in every CTA, so that every thread of the CTA gets
/// the row's total, bitwise the same in every CTA (past L1, in one batch of loads, each partial
/// read again until it carries the tag). `AllThreads`: by every thread (the split kernel: its SM
/// idles while the group meets, and the latency of the reads is what counts); else by the fewest
/// warps (the staged split: the SM's other CTAs issue an instruction most cycles). One warp
/// alone takes as many batches as it reads 128 partials (tuning log, split rows).
template <class Exchange, int Threads, bool AllThreads>
__device__ inline partial gather(tagged_partial* slots, int count, std::uint32_t tag,
                                 typename Exchange::storage& smem) {
  if constexpr (AllThreads) {
    return gather_by_all<Exchange, Threads>(slots, count, tag, smem);
  } else {
    return gather_by_warps<Exchange, Threads>(slots, count, tag, smem);
  }
}

/// Where group `group`'s partials of its `iteration`-th meeting are: the group's first set for
/// its first meeting (kept for held_back_kernel), then its second and third in turn.
__device__ inline tagged_partial* meeting_slots(split_workspace const& ws, int group,
                                                int iteration) {
  const int set = iteration == 0 ? 0 : 1 + (iteration & 1);
  return ws.partials + (std::int64_t{group} * 3 + set) * ws.split_ctas;
}

/// The meeting of a split group's CTAs over one row (its `iteration`-th). Thread 0 publishes
/// this CTA's partial `acc` with the meeting's tag (iteration + 1), counts its arrival and waits
/// until the group's others have arrived (relaxed atomics: the counter only says when to look,
/// and a release would wait for the SM's stores in flight; tuning log, split rows); then the
/// CTA gathers the group's partials (see gather). A set of partials is rewritten two meetings
/// later (meeting_slots), by a CTA that has passed the meeting in between, so after every CTA
/// has read it.
template <class Exchange, int Threads, bool AllThreads>
__device__ inline partial meet(split_workspace const& ws, int group, int rank, int iteration,
                               partial acc, typename Exchange::storage& smem) {
  tagged_partial* slots = meeting_slots(ws, group, iteration);
  const std::uint32_t tag = static_cast<std::uint32_t>(iteration + 1);
  if (threadIdx.x == 0) {
    const std::uint64_t tagged = std::uint64_t{tag} << 32;
    workspace_word(slots[rank].m)
        .store(tagged | bits_as<std::uint32_t>(acc.m), cuda::memory_order_relaxed);
    workspace_word(slots[rank].s)
        .store(tagged | bits_as<std::uint32_t>(acc.s), cuda::memory_order_relaxed);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrived(ws.counters[group]);
    arrived.fetch_add(1u, cuda::memory_order_relaxed);
    const unsigned target = static_cast<unsigned>(iteration + 1) * ws.split_ctas;
    while (arrived.load(cuda::memory_order_relaxed) < target) __nanosleep(32);
  }
  __syncthreads();
  return gather<Exchange, Threads, AllThreads>(slots, ws.split_ctas, tag, smem);
}

}  // namespace rowsoftmax::detail
