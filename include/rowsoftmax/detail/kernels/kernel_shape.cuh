// SPDX-License-Identifier: Apache-2.0
// What every kernel derives from its op, vector width and configuration: threads, slots, the
// exchange, the fragment and the register bound; and the attributes every kernel carries.
#pragma once

#include <type_traits>

#include "../../plan.hpp"
#include "../exchange.cuh"

/// Kernels in a header are templates (no ODR clash) with hidden visibility, so two shared
/// libraries that both include this header keep their own copies.
#if defined(__GNUC__)
#define ROWSOFTMAX_KERNEL __global__ __attribute__((visibility("hidden")))
#else
#define ROWSOFTMAX_KERNEL __global__
#endif

namespace rowsoftmax::detail {

/// Whether `Op` keeps 16-bit elements' exps as floats between its fold and its store (an op's
/// `floats_kept`; see float_exps_forward_op).
template <class Op, class = void>
inline constexpr bool floats_kept_v = false;
template <class Op>
inline constexpr bool floats_kept_v<Op, std::void_t<decltype(Op::floats_kept)>> = Op::floats_kept;

/// The shape of configuration `Config`'s kernel for `Op` at vector width `V`.
template <class Op, int V, int Config>
struct kernel_shape {
  static constexpr kernel_config config = kernel_configs[Config];
  static constexpr int threads_per_row = config.threads_per_row;
  static constexpr int threads_per_cta = config.threads_per_cta;
  static constexpr int rows_per_thread = config.rows_per_thread;
  static constexpr int slots = slots_per_thread(config, V, sizeof(typename Op::value_type));
  static constexpr int lanes = threads_per_row < 32 ? threads_per_row : 32;
  static constexpr int warps_per_row = threads_per_row / lanes;
  using exchange = row_exchange<typename Op::reduce, lanes, threads_per_cta, config.clustered>;
  using fragment = typename Op::template fragment<V, slots>;
  static_assert(V == 16 / sizeof(typename Op::value_type) || (V == 1 && config.scalar_ok),
                "vector width: 16 bytes, or the scalar fallback where configured");
  static_assert(rows_per_thread == 1 || (threads_per_row < 32 && !config.clustered),
                "several rows a thread: sub-warp rows (shuffles alone), one CTA");
  static_assert(slots >= 1 && (V * slots * sizeof(typename Op::value_type)) % 16 == 0);
  // Registers: the row data a thread holds plus a slack (ctas_per_sm), so that the CTAs an SM
  // runs are set by the data, not by a compiler that keeps every exp of a thread in flight
  // (tuning log, general lessons). Rows of two input tensors of at most a warp are left
  // unbounded: they run faster so, at fewer CTAs an SM.
  static constexpr bool unbounded = Op::inputs == 2 && threads_per_row <= 32;
  static constexpr int min_ctas_per_sm =
      unbounded
          ? 1
          : ctas_per_sm(config, Op::inputs, sizeof(typename Op::value_type), floats_kept_v<Op>);
};

}  // namespace rowsoftmax::detail
