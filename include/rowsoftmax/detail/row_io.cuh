// SPDX-License-Identifier: Apache-2.0
// Loading and storing a thread's share of one row: 16-byte vectors where a whole vector lies
// inside the row, element-wise predicated accesses at the (possibly misaligned) head and the
// tail. Written once; every op and every tier goes through these two functions.
#pragma once

#include <cstdint>

#include "vec.cuh"

namespace rowsoftmax::detail {

/// One thread's view of one row. Window j covers elements [j*V - shift, j*V - shift + V) of
/// the row; the address of its first element is V-aligned, so a window that lies wholly inside
/// [0, cols) is one aligned vector access.
struct row_window {
  std::int64_t row;    ///< row index, clamped into range for inactive threads
  std::int64_t cols;   ///< elements before this limit are valid: the row length (or the end of
                       ///< this CTA's share of a cluster row), 0 for a row past the end
  std::int64_t first;  ///< window of this thread's slot 0; slot k is first + k * stride
  int stride;          ///< windows between a thread's slots: the threads sharing the row
  int shift;           ///< elements between the aligned base and the row start (the head)
};

/// Elements before a row start in its aligned vector: the head the window grid peels.
template <int V, class T>
__device__ inline int head_of(T const* row_start) {
  if constexpr (V == 1) {
    return 0;
  } else {
    return static_cast<int>((reinterpret_cast<std::uintptr_t>(row_start) / sizeof(T)) % V);
  }
}

/// Reads N windows (`w.stride` windows apart) of a row into registers; elements outside
/// [0, cols) read as `fill` and touch no memory. All loads are issued before any is used.
template <class T, int V, int N>
__device__ inline void load_windows(T const* row, row_window const& w, T fill,
                                    vec_t<T, V> (&out)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V - w.shift;
    if (e0 >= 0 && e0 + V <= w.cols) {
      out[k] = *reinterpret_cast<vec_t<T, V> const*>(row + e0);
    } else {
      T e[V];
#pragma unroll
      for (int l = 0; l < V; ++l) e[l] = (e0 + l >= 0 && e0 + l < w.cols) ? row[e0 + l] : fill;
      out[k] = vec_t<T, V>::of(e);
    }
  }
}

/// Writes the in-range elements of N windows; the same geometry as `load_windows`.
template <class T, int V, int N>
__device__ inline void store_windows(T* row, row_window const& w, vec_t<T, V> const (&in)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V - w.shift;
    if (e0 >= 0 && e0 + V <= w.cols) {
      *reinterpret_cast<vec_t<T, V>*>(row + e0) = in[k];
    } else {
#pragma unroll
      for (int l = 0; l < V; ++l) {
        const std::int64_t e = e0 + l;
        if (e >= 0 && e < w.cols) row[e] = in[k].get(l);
      }
    }
  }
}

}  // namespace rowsoftmax::detail
