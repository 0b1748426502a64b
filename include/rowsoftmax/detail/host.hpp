// SPDX-License-Identifier: Apache-2.0
// Host-side helpers of the launchers that need no kernel: argument validation, the vector
// layout shared by a call's tensors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../plan.hpp"

/// Returns the error of a cudaError_t expression from the enclosing function, if any.
#define ROWSOFTMAX_TRY(...)                                     \
  do {                                                          \
    const cudaError_t rowsoftmax_err_ = (__VA_ARGS__);          \
    if (rowsoftmax_err_ != cudaSuccess) return rowsoftmax_err_; \
  } while (0)

namespace rowsoftmax::detail {

/// A tensor argument: its base pointer and row stride in elements.
struct tensor_arg {
  void const* ptr;
  std::int64_t stride;
  bool output;
};

/// Checks a call's arguments; never touches the device. `*nothing_to_do` is set when rows == 0.
/// Rules: rows, cols >= 0; rows == 0 is a no-op; otherwise cols >= 1, every pointer non-null and
/// aligned to its element, every stride >= cols, the last element's byte offset representable
/// in int64, and an output that is the same pointer as an input has the same stride (in-place).
template <std::size_t N>
inline cudaError_t validate(tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                            std::int64_t cols, bool* nothing_to_do) noexcept {
  *nothing_to_do = false;
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  if (rows == 0) {
    *nothing_to_do = true;
    return cudaSuccess;
  }
  if (cols == 0) return cudaErrorInvalidValue;
  const std::int64_t max_elems =
      std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(elem_size);
  for (std::size_t i = 0; i < N; ++i) {
    if (t[i].ptr == nullptr) return cudaErrorInvalidValue;
    if (reinterpret_cast<std::uintptr_t>(t[i].ptr) % elem_size != 0) return cudaErrorInvalidValue;
    if (t[i].stride < cols) return cudaErrorInvalidValue;
    // (rows - 1) * stride + cols <= max_elems, without overflowing.
    if ((rows - 1) > (max_elems - cols) / t[i].stride) return cudaErrorInvalidValue;
  }
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      if (i != j && t[i].output && t[i].ptr == t[j].ptr && t[i].stride != t[j].stride)
        return cudaErrorInvalidValue;
  return cudaSuccess;
}

/// The widest vector access every tensor allows. 16-byte vectors when all rows start on a
/// 16-byte boundary, or when every tensor's rows are misaligned by the same amount (the kernel
/// then peels the same head from each); element access otherwise. Contiguous where, besides,
/// every tensor's rows of `cols` elements follow each other (or there is one row).
template <std::size_t N>
inline row_layout vector_layout_of(tensor_arg const (&t)[N], std::size_t elem_size,
                                   std::int64_t rows, std::int64_t cols) noexcept {
  const int vec = static_cast<int>(16 / elem_size);
  const auto head = [&](void const* p) {
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(p) % 16 / elem_size);
  };
  // With one row the stride never moves the start.
  const auto stride_mod = [&](std::int64_t s) { return rows == 1 ? 0 : static_cast<int>(s % vec); };
  const int h0 = head(t[0].ptr);
  const int s0 = stride_mod(t[0].stride);
  bool contiguous = true;
  for (std::size_t i = 0; i < N; ++i) {
    if (head(t[i].ptr) != h0 || stride_mod(t[i].stride) != s0) return {1, false, false};
    contiguous = contiguous && (rows == 1 || t[i].stride == cols);
  }
  return {vec, h0 != 0 || s0 != 0, contiguous};
}

/// The layout of a call's tensors: vector_layout_of's vector access and contiguity, out of
/// place where no output is an input.
template <std::size_t N>
inline row_layout layout_of(tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                            std::int64_t cols) noexcept {
  bool out_of_place = true;
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      if (t[i].output && !t[j].output && t[i].ptr == t[j].ptr) out_of_place = false;
  row_layout l = vector_layout_of(t, elem_size, rows, cols);
  l.out_of_place = out_of_place;
  return l;
}

}  // namespace rowsoftmax::detail
