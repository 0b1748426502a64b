// SPDX-License-Identifier: Apache-2.0
// The tiled tier: short contiguous rows, a CTA's rows copied into shared memory in 16-byte
// vectors, held from there as the register tier holds them, copied out.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../math.cuh"
#include "../row_io.cuh"
#include "kernel_shape.cuh"
#include "resident.cuh"

namespace rowsoftmax::detail {

/// Short rows that follow each other in every tensor (row_layout::contiguous), at any alignment:
/// a CTA's rows are one span of each tensor, copied into a shared-memory tile in 16-byte vectors
/// (element-wise at the span's two ends only; the tile keeps the span's alignment), held and
/// reduced from there as resident_kernel holds rows, in windows from each row's start whatever
/// its alignment (in_tile), normalized in place over the first input's tile and copied out the
/// same way.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    tiled_kernel(typename Op::args const args) {
  using shape = kernel_shape<Op, V, Config>;
  using T = typename Op::value_type;
  using vec = vec_t<T, V>;
  constexpr int threads_per_row = shape::threads_per_row, threads = shape::threads_per_cta;
  constexpr int rows = shape::rows_per_thread, rows_per_pass = threads / threads_per_row;
  // A tile's vectors, `rows` + 1 a thread: a CTA's rows hold at most threads * rows windows
  // (row_windows), so their span, at any alignment, at most one vector more, and the last
  // row's last window reads at most a word past it.
  constexpr int slots = rows + 1;
  static_assert(shape::slots == 1 && sizeof(vec) == 16);
  static_assert(std::is_same_v<typename Op::output_type, T>,
                "rows are normalized over the input's tile: one element type");
  __shared__ typename shape::exchange::storage smem;
  __shared__ uint4 tile[Op::inputs][threads * slots];
  shape::exchange::begin(smem, shape::warps_per_row, 1);

  const std::int64_t first_row = std::int64_t{blockIdx.x} * rows_per_pass * rows;
  const std::int64_t rows_left = args.rows - first_row;
  const std::int64_t held = rows_left < rows_per_pass * rows ? rows_left : rows_per_pass * rows;
  // A tensor's span as one row of held * cols elements, consecutive threads on consecutive
  // vectors; the tile's vector k is the span's window k.
  auto span = [&](T const* tensor) {
    return row_window{0, held * args.cols, threadIdx.x, threads,
                      head_of<V>(tensor + first_row * args.cols)};
  };
  {
    const T zero = from_float<T>(0.0f);  // (the tile's elements outside the span: never used)
    vec in[Op::inputs][slots];
#pragma unroll
    for (int t = 0; t < Op::inputs; ++t) {
      T const* input = Op::input(args, t);
      load_windows(input + first_row * args.cols, span(input), zero, in[t]);
    }
#pragma unroll
    for (int t = 0; t < Op::inputs; ++t) {
      T const* input = Op::input(args, t);
      finish_windows(input + first_row * args.cols, span(input), zero, in[t]);
#pragma unroll
      for (int k = 0; k < slots; ++k)
        *reinterpret_cast<vec*>(&tile[t][threadIdx.x + k * threads]) = in[t][k];
    }
  }
  __syncthreads();
  T* tiles[Op::inputs];
#pragma unroll
  for (int t = 0; t < Op::inputs; ++t)
    tiles[t] = reinterpret_cast<T*>(tile[t]) + span(Op::input(args, t)).shift;
  const typename Op::args on_tile = Op::on_tiles(args, tiles, held, first_row);
  auto window = [&](int j) {
    row_window w =
        Op::template window<V>(on_tile, j * rows_per_pass + threadIdx.x / threads_per_row,
                               threadIdx.x % threads_per_row, threads_per_row);
    w.shift = 0;  // windows from the row's start (in_tile)
    return w;
  };
  hold_rows<Op, shape>(on_tile, window, smem, 1, in_tile{});
  __syncthreads();
  // The output's rows are aligned as the inputs' (row_layout: equal heads): its span's window k
  // is the first tile's vector k.
  vec out[slots];
#pragma unroll
  for (int k = 0; k < slots; ++k)
    out[k] = *reinterpret_cast<vec const*>(&tile[0][threadIdx.x + k * threads]);
  store_windows(Op::output(args) + first_row * args.cols, span(Op::output(args)), out);
}

}  // namespace rowsoftmax::detail
