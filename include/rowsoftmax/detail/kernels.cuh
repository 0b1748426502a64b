// SPDX-License-Identifier: Apache-2.0
// The two kernel skeletons, written once for every op (forward, backward) and configuration:
//   resident_kernel  - a row (or several) held in registers: read once, one exchange, store.
//                      With ClusterSize > 1 the row spans the CTAs of a cluster (sm_90).
//   streaming_kernel - rows longer than the registers of a cluster: pass 1 streams the CTA's
//                      share of the row into a partial, one exchange, pass 2 streams it again
//                      (last tile first, so the most recently read tiles come from L2).
#pragma once

#include <cstdint>

#include "../plan.hpp"
#include "exchange.cuh"
#include "math.cuh"
#include "row_io.cuh"

// Kernels in a header are templates (no ODR clash) with hidden visibility, so two shared
// libraries that both include this header keep their own copies.
#if defined(__GNUC__)
#define ROWSOFTMAX_KERNEL __global__ __attribute__((visibility("hidden")))
#else
#define ROWSOFTMAX_KERNEL __global__
#endif

namespace rowsoftmax::detail {

template <class Op, int V, int Config>
struct kernel_shape {
  static constexpr kernel_config config = kernel_configs[Config];
  static constexpr int threads_per_row = config.threads_per_row;
  static constexpr int threads_per_cta = config.threads_per_cta;
  static constexpr int cluster_size = config.cluster_size;
  static constexpr int slots = slots_per_thread(config, V, sizeof(typename Op::value_type));
  using exchange =
      row_exchange<typename Op::reduce, threads_per_row, threads_per_cta, cluster_size>;
  using fragment = typename Op::template fragment<V, slots>;
  // Registers: as many again as the row data a thread holds (32 for 128 bytes of one tensor),
  // so that 1024 threads hold 128 KB of a one-tensor row per SM. Without this bound, 16-bit
  // rows were scheduled into ~110 registers (all exps of a thread in flight), half the CTAs.
  static constexpr int data_registers = config.bytes / 4 * Op::tensors;
  static constexpr int min_ctas_per_sm =
      65536 / (threads_per_cta * 2 * data_registers) > 1
          ? 65536 / (threads_per_cta * 2 * data_registers)
          : 1;
  static_assert(V == 16 / sizeof(typename Op::value_type) || (V == 1 && config.scalar_ok),
                "vector width: 16 bytes, or the scalar fallback where configured");
  static_assert(slots >= 1 && (V * slots * sizeof(typename Op::value_type)) % 16 == 0);
};

template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta, (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    resident_kernel(typename Op::args const a) {
  using shape = kernel_shape<Op, V, Config>;
  constexpr int tpr = shape::threads_per_row;
  constexpr int cluster = shape::cluster_size;
  __shared__ typename shape::exchange::storage smem;
  shape::exchange::begin(smem);

  const int cta_rank = cluster > 1 ? static_cast<int>(blockIdx.x % cluster) : 0;
  const std::int64_t row =
      std::int64_t{blockIdx.x / cluster} * (shape::threads_per_cta / tpr) + threadIdx.x / tpr;
  row_window w = Op::template window<V>(a, row, threadIdx.x % tpr);
  if constexpr (cluster > 1) {
    // Equal shares: CTA r owns windows [r * share, (r + 1) * share), so a row just above a
    // cluster threshold keeps every CTA equally busy instead of leaving the last ones empty.
    const std::int64_t share = ceil_div(ceil_div(w.cols + w.shift, V), cluster);
    w.first += cta_rank * share;
    const std::int64_t end = (cta_rank + 1) * share * V - w.shift;
    w.cols = end < w.cols ? end : w.cols;
  }

  typename shape::fragment f;
  Op::template load<tpr>(a, w, f);
  const partial total = shape::exchange::allreduce(Op::fold(f), smem);
  Op::template store<tpr>(a, w, f, total);
}

template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta, (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    streaming_kernel(typename Op::args const a) {
  using shape = kernel_shape<Op, V, Config>;
  using reduce = typename Op::reduce;
  constexpr int tpr = shape::threads_per_row;
  constexpr int cluster = shape::cluster_size;
  static_assert(tpr == shape::threads_per_cta, "one row per CTA");
  __shared__ typename shape::exchange::storage smem;
  shape::exchange::begin(smem);

  const int cta_rank = cluster > 1 ? static_cast<int>(blockIdx.x % cluster) : 0;
  row_window w = Op::template window<V>(a, std::int64_t{blockIdx.x / cluster}, 0);
  constexpr std::int64_t tile = std::int64_t{tpr} * shape::slots;  // windows per tile
  const std::int64_t tiles = ceil_div(ceil_div(w.cols + w.shift, V), tile);
  const std::int64_t per_cta = ceil_div(tiles, cluster);
  const std::int64_t t0 = cta_rank * per_cta;
  const std::int64_t t1 = t0 + per_cta < tiles ? t0 + per_cta : tiles;

  typename shape::fragment f;
  partial acc = reduce::identity();
  for (std::int64_t t = t0; t < t1; ++t) {
    w.first = t * tile + threadIdx.x;
    Op::template load<tpr>(a, w, f);
    acc = reduce::combine(acc, Op::fold(f));
  }
  const partial total = shape::exchange::allreduce(acc, smem);
  for (std::int64_t t = t1 - 1; t >= t0; --t) {
    w.first = t * tile + threadIdx.x;
    Op::template load<tpr>(a, w, f);
    Op::fold(f);
    Op::template store<tpr>(a, w, f, total);
  }
}

}  // namespace rowsoftmax::detail
