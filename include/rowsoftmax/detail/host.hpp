// SPDX-License-Identifier: Apache-2.0
// Host-side helpers of the launchers that need no kernel: argument validation and its
// explanation, the vector layout shared by a call's tensors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "../plan.hpp"

/// Returns the error of a cudaError_t expression from the enclosing function, if any.
#define ROWSOFTMAX_TRY(...)                                     \
  do {                                                          \
    const cudaError_t rowsoftmax_err_ = (__VA_ARGS__);          \
    if (rowsoftmax_err_ != cudaSuccess) return rowsoftmax_err_; \
  } while (0)

namespace rowsoftmax::detail {

/// A tensor argument: its base pointer, row stride in elements, whether the call writes it, and
/// its element size in bytes (0: the call's, the `elem_size` of the functions below; a fused
/// call's output may have another).
struct tensor_arg {
  void const* ptr;
  std::int64_t stride;
  bool output;
  unsigned char size = 0;
};

/// Tensor `t`'s element size in bytes in a call of elements of `elem_size` bytes.
inline std::size_t elem_of(tensor_arg const& t, std::size_t elem_size) noexcept {
  return t.size != 0 ? t.size : elem_size;
}

/// The argument rules of the launchers, in the order they are checked (the first broken one is
/// reported). Both `validate` (the launchers) and `explain_args` (rowsoftmax::explain_forward and
/// explain_backward) read them from `check_args`, so what is refused and what is explained agree.
enum class arg_rule : unsigned char {
  ok,                 ///< the arguments are valid
  negative_rows,      ///< rows < 0
  negative_cols,      ///< cols < 0
  zero_cols,          ///< cols == 0 while rows > 0
  null_pointer,       ///< a tensor's pointer is null while rows > 0
  misaligned,         ///< a tensor's pointer is not a multiple of its element size
  stride_below_cols,  ///< a tensor's row stride is smaller than cols
  offset_overflow,    ///< a tensor's last element lies beyond the int64 byte range
  in_place_type,      ///< an output is an input (in place) of another element type
  in_place_stride,    ///< an output is an input (in place) with another row stride
  overlap,            ///< an output shares bytes with an input without being it (in place)
};

/// The outcome of `check_args`: the rule broken and the tensors it concerns (indices into the
/// call's tensor_arg array; -1 where none). `tensor` for the per-tensor rules; for in_place_type
/// and in_place_stride `tensor` is the output and `other` the input it aliases.
struct arg_check {
  arg_rule rule = arg_rule::ok;
  int tensor = -1;
  int other = -1;
};

/// Whether the bytes [a, a + la) and [b, b + lb) intersect (no overflow for any addresses).
inline bool ranges_meet(std::uintptr_t a, std::uint64_t la, std::uintptr_t b,
                        std::uint64_t lb) noexcept {
  return b >= a ? b - a < la : a - b < lb;
}

/// Whether two tensors of `rows` rows of `row_bytes` bytes, their rows `step` bytes apart in
/// both (step >= row_bytes), share a byte: some rows i, j with |(b - a) + (j - i) step| <
/// row_bytes. Exact, in constant time: only the two multiples of `step` nearest the distance
/// can bring a row within reach.
inline bool strided_rows_meet(std::uintptr_t a, std::uintptr_t b, std::int64_t rows,
                              std::uint64_t row_bytes, std::uint64_t step) noexcept {
  const std::uint64_t d = b >= a ? b - a : a - b;  // by symmetry, the distance
  const std::uint64_t last = static_cast<std::uint64_t>(rows - 1);
  const std::uint64_t m = d / step;  // rows below or at the distance
  if (m >= last) return d - last * step < row_bytes;
  return d - m * step < row_bytes || (m + 1) * step - d < row_bytes;
}

/// The bytes from tensor `x`'s first element to its last (rows > 0): `rows` rows of `cols`
/// elements, `x.stride` apart.
inline std::uint64_t tensor_bytes(tensor_arg const& x, std::size_t elem_size, std::int64_t rows,
                                  std::int64_t cols) noexcept {
  return (static_cast<std::uint64_t>(rows - 1) * static_cast<std::uint64_t>(x.stride) +
          static_cast<std::uint64_t>(cols)) *
         elem_size;
}

/// Whether tensors `x` and `y` of the call share a byte: exactly where their strides and element
/// sizes are equal (interleaved rows that share nothing pass), conservatively otherwise (the
/// address ranges from the first row's start to the last row's end).
inline bool tensors_meet(tensor_arg const& x, tensor_arg const& y, std::size_t elem_size,
                         std::int64_t rows, std::int64_t cols) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(x.ptr);
  const auto b = reinterpret_cast<std::uintptr_t>(y.ptr);
  const std::uint64_t e = elem_of(x, elem_size), row_bytes = static_cast<std::uint64_t>(cols) * e;
  if (x.stride == y.stride && e == elem_of(y, elem_size) && rows > 1)
    return strided_rows_meet(a, b, rows, row_bytes, static_cast<std::uint64_t>(x.stride) * e);
  return ranges_meet(a, tensor_bytes(x, elem_of(x, elem_size), rows, cols), b,
                     tensor_bytes(y, elem_of(y, elem_size), rows, cols));
}

/// Checks a call's arguments; never touches the device. Rules: rows, cols >= 0; rows == 0 is a
/// no-op; otherwise cols >= 1, every pointer non-null and aligned to its element, every stride >=
/// cols, the last element's byte offset representable in int64, an output that is the same
/// pointer as an input has the same element type and stride (in-place), and an output that is not
/// an input shares no byte with one (tensors_meet: exact for equal strides, by address ranges
/// otherwise).
template <std::size_t N>
inline arg_check check_args(tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                            std::int64_t cols) noexcept {
  if (rows < 0) return {arg_rule::negative_rows};
  if (cols < 0) return {arg_rule::negative_cols};
  if (rows == 0) return {};
  if (cols == 0) return {arg_rule::zero_cols};
  for (std::size_t i = 0; i < N; ++i) {
    const int k = static_cast<int>(i);
    const std::size_t size = elem_of(t[i], elem_size);
    const std::int64_t max_elems =
        std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(size);
    if (t[i].ptr == nullptr) return {arg_rule::null_pointer, k};
    if (reinterpret_cast<std::uintptr_t>(t[i].ptr) % size != 0) return {arg_rule::misaligned, k};
    if (t[i].stride < cols) return {arg_rule::stride_below_cols, k};
    // (rows - 1) * stride + cols <= max_elems, without overflowing (a row alone may not fit).
    if (cols > max_elems || (rows - 1) > (max_elems - cols) / t[i].stride)
      return {arg_rule::offset_overflow, k};
  }
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      if (i != j && t[i].output && t[i].ptr == t[j].ptr) {
        if (elem_of(t[i], elem_size) != elem_of(t[j], elem_size))
          return {arg_rule::in_place_type, static_cast<int>(i), static_cast<int>(j)};
        if (t[i].stride != t[j].stride)
          return {arg_rule::in_place_stride, static_cast<int>(i), static_cast<int>(j)};
      }
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      if (i != j && t[i].output && !t[j].output && t[i].ptr != t[j].ptr &&
          tensors_meet(t[i], t[j], elem_size, rows, cols))
        return {arg_rule::overlap, static_cast<int>(i), static_cast<int>(j)};
  return {};
}

/// The launchers' check: cudaErrorInvalidValue where `check_args` finds a broken rule.
/// `*nothing_to_do` is set when the arguments are valid and rows == 0.
template <std::size_t N>
inline cudaError_t validate(tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                            std::int64_t cols, bool* nothing_to_do) noexcept {
  const arg_check c = check_args(t, elem_size, rows, cols);
  *nothing_to_do = c.rule == arg_rule::ok && rows == 0;
  return c.rule == arg_rule::ok ? cudaSuccess : cudaErrorInvalidValue;
}

/// One thread's buffer for the sentences of `explain_args`: a sentence stays valid until the
/// thread's next explanation.
inline constexpr std::size_t explain_buffer_size = 320;
inline char* explain_buffer() noexcept {
  static thread_local char buffer[explain_buffer_size];
  return buffer;
}

/// The sentence for the rule `c` breaks, naming the argument (`names[i]` is tensor i's pointer
/// parameter; its stride parameter is "<name>_row_stride") and the values; nullptr for ok.
template <std::size_t N>
const char* explain_args(arg_check c, char const* const (&names)[N], tensor_arg const (&t)[N],
                         std::size_t elem_size, std::int64_t rows, std::int64_t cols) noexcept {
  char* b = explain_buffer();
  constexpr std::size_t n = explain_buffer_size;
  const auto ll = [](std::int64_t v) { return static_cast<long long>(v); };
  char const* name = c.tensor >= 0 ? names[c.tensor] : "";
  const std::int64_t stride = c.tensor >= 0 ? t[c.tensor].stride : 0;
  const std::size_t size = c.tensor >= 0 ? elem_of(t[c.tensor], elem_size) : elem_size;
  switch (c.rule) {
    case arg_rule::ok:
      return nullptr;
    case arg_rule::negative_rows:
      std::snprintf(b, n, "rows (%lld) is negative", ll(rows));
      break;
    case arg_rule::negative_cols:
      std::snprintf(b, n, "cols (%lld) is negative", ll(cols));
      break;
    case arg_rule::zero_cols:
      std::snprintf(b, n, "cols is 0 while rows (%lld) is not: a row needs at least one element",
                    ll(rows));
      break;
    case arg_rule::null_pointer:
      std::snprintf(b, n, "%s is null while rows (%lld) is not 0", name, ll(rows));
      break;
    case arg_rule::misaligned:
      std::snprintf(b, n, "%s (%p) is not aligned to its element size (%zu bytes)", name,
                    t[c.tensor].ptr, size);
      break;
    case arg_rule::stride_below_cols:
      std::snprintf(b, n, "%s_row_stride (%lld) is smaller than cols (%lld)", name, ll(stride),
                    ll(cols));
      break;
    case arg_rule::offset_overflow:
      std::snprintf(b, n,
                    "%s's last element, (rows - 1) * %s_row_stride + cols = (%lld - 1) * %lld + "
                    "%lld elements of %zu bytes, lies beyond the int64 byte range",
                    name, name, ll(rows), ll(stride), ll(cols), size);
      break;
    case arg_rule::in_place_type:
      std::snprintf(b, n,
                    "%s is %s (in place) but their element types differ (%zu and %zu bytes); "
                    "in place needs one type",
                    name, names[c.other], size, elem_of(t[c.other], elem_size));
      break;
    case arg_rule::in_place_stride:
      std::snprintf(b, n,
                    "%s is %s (in place) but %s_row_stride (%lld) differs from %s_row_stride "
                    "(%lld); in place needs equal strides",
                    name, names[c.other], name, ll(stride), names[c.other], ll(t[c.other].stride));
      break;
    case arg_rule::overlap:
      std::snprintf(
          b, n,
          "%s (%p, row stride %lld) shares memory with %s (%p, row stride %lld) without "
          "being it: an output may be an input (in place: the same pointer and stride) "
          "but not overlap one otherwise%s",
          name, t[c.tensor].ptr, ll(stride), names[c.other], t[c.other].ptr, ll(t[c.other].stride),
          stride == t[c.other].stride ? "" : " (unequal strides: checked by address range)");
      break;
  }
  return b;
}

/// The widest vector access every tensor allows: windows of 16 / elem_size elements (16 bytes
/// of the inputs; a fused output of other elements has windows of as many of its own). Vectors
/// when all rows start on a window boundary, or when every tensor's rows are misaligned by the
/// same number of elements (the kernel then peels the same head from each); element access
/// otherwise. Contiguous where, besides, every tensor's rows of `cols` elements follow each
/// other (or there is one row) and all are of one element type (tiled rows are normalized over
/// the input's tile).
template <std::size_t N>
inline row_layout vector_layout_of(tensor_arg const (&t)[N], std::size_t elem_size,
                                   std::int64_t rows, std::int64_t cols) noexcept {
  const int vec = static_cast<int>(16 / elem_size);
  const auto head = [&](tensor_arg const& x) {
    const std::size_t size = elem_of(x, elem_size);
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(x.ptr) % (vec * size) / size);
  };
  // With one row the stride never moves the start.
  const auto stride_mod = [&](std::int64_t s) { return rows == 1 ? 0 : static_cast<int>(s % vec); };
  const int h0 = head(t[0]);
  const int s0 = stride_mod(t[0].stride);
  bool contiguous = true;
  for (std::size_t i = 0; i < N; ++i) {
    if (head(t[i]) != h0 || stride_mod(t[i].stride) != s0) return {1, false, false};
    contiguous =
        contiguous && (rows == 1 || t[i].stride == cols) && elem_of(t[i], elem_size) == elem_size;
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
