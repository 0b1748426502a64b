// SPDX-License-Identifier: Apache-2.0
// Public fused launchers: softmax and log-softmax, forward and backward, with a scale (one a
// call and one a row), a row log-sum-exp output and an empty-row policy (softmax_options), and
// with the masks that keep a prefix of each row (masked_softmax_options: lengths, causal), a
// boolean mask (bool_masked_softmax_options) and an additive bias (biased_softmax_options), in
// the one read and one write of plain softmax (and the bias's read), through every tier.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "detail/fused_ops.cuh"
#include "options.hpp"
#include "softmax.cuh"

namespace rowsoftmax {

namespace detail {

/// The option rules of the fused launchers, checked after the tensors' (check_args).
enum class option_rule : unsigned char {
  ok,
  scale_not_finite,      ///< options.scale is NaN or infinite
  row_scale_misaligned,  ///< options.row_scale is not 4-byte aligned
  row_lse_misaligned,    ///< options.row_lse is not 4-byte aligned (forward)
  bad_empty_rows,        ///< options.empty is not an empty_rows value
  row_scale_overlaps,    ///< options.row_scale shares bytes with the output
  row_lse_overlaps,      ///< options.row_lse shares bytes with a tensor or row_scale (forward)
  bad_layout,            ///< heads or queries < 1, or rows not a multiple of heads * queries
  lengths_misaligned,    ///< options.lengths is not 4-byte aligned
  negative_stride,       ///< a stride of options.lengths_strides is negative
  lengths_too_large,     ///< options.lengths' span does not fit the address space
  lengths_overlaps,      ///< options.lengths shares bytes with the output or row_lse
  keep_negative_stride,  ///< a stride of options.keep_strides is negative
  keep_too_large,        ///< options.keep's span does not fit the address space
  keep_overlaps,         ///< options.keep shares bytes with the output or row_lse
  bad_bias_type,         ///< options.bias_dtype is not a bias_type value
  bias_misaligned,       ///< options.bias is not aligned to its element size
  bias_negative_stride,  ///< a stride of options.bias_strides is negative
  bias_too_large,        ///< options.bias's span does not fit the address space
  bias_overlaps,         ///< options.bias shares bytes with the output or row_lse
};

/// The bytes an operand broadcast with `st` over rows of layout (heads, queries) spans: to its
/// element of the last row's (batch, head, query), plus one; 0 where it does not fit 64 bits.
inline std::uint64_t broadcast_span(broadcast_strides const& st, std::int64_t rows,
                                    std::int64_t heads, std::int64_t queries,
                                    std::size_t elem_size) noexcept {
  const std::uint64_t limit = UINT64_MAX / 4;
  const std::int64_t batches = rows / (heads * queries);
  const std::int64_t last[3] = {batches - 1, heads - 1, queries - 1};
  const std::int64_t stride[3] = {st.batch, st.head, st.query};
  std::uint64_t end = 0;
  for (int i = 0; i < 3; ++i) {
    const auto n = static_cast<std::uint64_t>(last[i]), d = static_cast<std::uint64_t>(stride[i]);
    if (n != 0 && d > limit / n) return 0;
    end += n * d;  // each term < 2^62, three of them: no wrap
  }
  if (end >= limit / elem_size) return 0;
  return (end + 1) * elem_size;
}

/// Whether broadcast strides `st` have a negative one.
inline bool has_negative(broadcast_strides const& st) noexcept {
  return st.batch < 0 || st.head < 0 || st.query < 0;
}

/// Whether `span` bytes at `p` (a mask the kernels read) meet what the call writes: an output
/// tensor, or forward's row_lse (rows > 0).
template <std::size_t N>
bool meets_writes(void const* p, std::uint64_t span, softmax_options const& o, direction dir,
                  tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                  std::int64_t cols) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t i = 0; i < N; ++i)
    if (t[i].output && ranges_meet(at, span, reinterpret_cast<std::uintptr_t>(t[i].ptr),
                                   tensor_bytes(t[i], elem_of(t[i], elem_size), rows, cols)))
      return true;
  return dir == direction::forward && o.row_lse != nullptr &&
         ranges_meet(at, span, reinterpret_cast<std::uintptr_t>(o.row_lse),
                     static_cast<std::uint64_t>(rows) * sizeof(float));
}

/// The rules of masked_softmax_options beyond softmax_options' (check_options).
template <std::size_t N>
option_rule check_masks(masked_softmax_options const& o, direction dir, tensor_arg const (&t)[N],
                        std::size_t elem_size, std::int64_t rows, std::int64_t cols) noexcept {
  if (o.heads < 1 || o.queries < 1) return option_rule::bad_layout;
  if (rows > 0 && (o.heads > rows || o.queries > rows || rows % o.heads != 0 ||
                   (rows / o.heads) % o.queries != 0))
    return option_rule::bad_layout;
  if (o.lengths == nullptr) return option_rule::ok;
  if (reinterpret_cast<std::uintptr_t>(o.lengths) % alignof(int) != 0)
    return option_rule::lengths_misaligned;
  if (has_negative(o.lengths_strides)) return option_rule::negative_stride;
  if (rows == 0) return option_rule::ok;
  const std::uint64_t span =
      broadcast_span(o.lengths_strides, rows, o.heads, o.queries, sizeof(int));
  if (span == 0) return option_rule::lengths_too_large;
  return meets_writes(o.lengths, span, o, dir, t, elem_size, rows, cols)
             ? option_rule::lengths_overlaps
             : option_rule::ok;
}

/// Checks a fused call's options (after its tensors pass check_args); never touches the device.
/// The per-row arrays are checked against the tensors by address range (a row array of `rows`
/// floats against each tensor's span).
template <std::size_t N>
option_rule check_options(softmax_options const& o, direction dir, tensor_arg const (&t)[N],
                          std::size_t elem_size, std::int64_t rows, std::int64_t cols) noexcept {
  if (!std::isfinite(o.scale)) return option_rule::scale_not_finite;
  if (reinterpret_cast<std::uintptr_t>(o.row_scale) % alignof(float) != 0)
    return option_rule::row_scale_misaligned;
  const bool lse = dir == direction::forward && o.row_lse != nullptr;
  if (lse && reinterpret_cast<std::uintptr_t>(o.row_lse) % alignof(float) != 0)
    return option_rule::row_lse_misaligned;
  if (o.empty != empty_rows::nan && o.empty != empty_rows::zero) return option_rule::bad_empty_rows;
  if (rows == 0) return option_rule::ok;
  const std::uint64_t row_floats = static_cast<std::uint64_t>(rows) * sizeof(float);
  const auto meets = [&](void const* p, tensor_arg const& x) {
    return ranges_meet(reinterpret_cast<std::uintptr_t>(p), row_floats,
                       reinterpret_cast<std::uintptr_t>(x.ptr),
                       tensor_bytes(x, elem_of(x, elem_size), rows, cols));
  };
  for (std::size_t i = 0; i < N; ++i) {
    if (o.row_scale != nullptr && t[i].output && meets(o.row_scale, t[i]))
      return option_rule::row_scale_overlaps;
    if (lse && meets(o.row_lse, t[i])) return option_rule::row_lse_overlaps;
  }
  if (lse && o.row_scale != nullptr &&
      ranges_meet(reinterpret_cast<std::uintptr_t>(o.row_lse), row_floats,
                  reinterpret_cast<std::uintptr_t>(o.row_scale), row_floats))
    return option_rule::row_lse_overlaps;
  return option_rule::ok;
}

/// The bytes a row operand spans (elements of `size` bytes, `cols` a row, the rows' starts
/// broadcast with `st` over rows of layout (heads, queries)): to the last row's start, plus the
/// row; 0 where it does not fit 2^62 bytes.
inline std::uint64_t row_operand_span(broadcast_strides const& st, std::int64_t rows,
                                      std::int64_t heads, std::int64_t queries, std::int64_t cols,
                                      std::size_t size) noexcept {
  const std::uint64_t starts = broadcast_span(st, rows, heads, queries, 1);
  if (starts == 0 || starts > UINT64_MAX / 4 / size - static_cast<std::uint64_t>(cols)) return 0;
  return (starts - 1 + static_cast<std::uint64_t>(cols)) * size;
}

/// The rules of bool_masked_softmax_options beyond masked_softmax_options' (check_masks).
template <std::size_t N>
option_rule check_keep(bool_masked_softmax_options const& o, direction dir,
                       tensor_arg const (&t)[N], std::size_t elem_size, std::int64_t rows,
                       std::int64_t cols) noexcept {
  if (o.keep == nullptr) return option_rule::ok;
  if (has_negative(o.keep_strides)) return option_rule::keep_negative_stride;
  if (rows == 0 || cols == 0) return option_rule::ok;
  const std::uint64_t span = row_operand_span(o.keep_strides, rows, o.heads, o.queries, cols, 1);
  if (span == 0) return option_rule::keep_too_large;
  return meets_writes(o.keep, span, o, dir, t, elem_size, rows, cols) ? option_rule::keep_overlaps
                                                                      : option_rule::ok;
}

/// The rules of biased_softmax_options beyond bool_masked_softmax_options' (check_keep), for
/// forward calls (backward does not read the bias). `elem_size`: the tensors' element size.
template <std::size_t N>
option_rule check_bias(biased_softmax_options const& o, tensor_arg const (&t)[N],
                       std::size_t elem_size, std::int64_t rows, std::int64_t cols) noexcept {
  if (o.bias_dtype != bias_type::input && o.bias_dtype != bias_type::f32)
    return option_rule::bad_bias_type;
  if (o.bias == nullptr) return option_rule::ok;
  const std::size_t size = o.bias_dtype == bias_type::f32 ? sizeof(float) : elem_size;
  if (reinterpret_cast<std::uintptr_t>(o.bias) % size != 0) return option_rule::bias_misaligned;
  if (has_negative(o.bias_strides)) return option_rule::bias_negative_stride;
  if (rows == 0 || cols == 0) return option_rule::ok;
  const std::uint64_t span = row_operand_span(o.bias_strides, rows, o.heads, o.queries, cols, size);
  if (span == 0) return option_rule::bias_too_large;
  return meets_writes(o.bias, span, o, direction::forward, t, elem_size, rows, cols)
             ? option_rule::bias_overlaps
             : option_rule::ok;
}

/// check_options (and, masked, check_masks; with a boolean mask, check_keep; forward with a bias,
/// check_bias) for a call (fused_forward_call, fused_backward_call).
template <class Call>
option_rule check_call_options(Call const& call) noexcept {
  constexpr std::size_t elem = sizeof(typename Call::op::value_type);
  option_rule r = check_options(call.options, Call::op::dir, call.tensors, elem, call.args.rows,
                                call.args.cols);
  if constexpr (Call::masked) {
    if (r == option_rule::ok)
      r = check_masks(call.options, Call::op::dir, call.tensors, elem, call.args.rows,
                      call.args.cols);
  }
  if constexpr (Call::keep) {
    if (r == option_rule::ok)
      r = check_keep(call.options, Call::op::dir, call.tensors, elem, call.args.rows,
                     call.args.cols);
  }
  if constexpr (Call::bias) {
    if (r == option_rule::ok)
      r = check_bias(call.options, call.tensors, elem, call.args.rows, call.args.cols);
  }
  return r;
}

/// The options type of a fused call: masked_softmax_options where `Masked`,
/// bool_masked_softmax_options where `Keep`, biased_softmax_options where `Bias`.
template <bool Masked, bool Keep = false, bool Bias = false>
using options_of = std::conditional_t<
    Bias, biased_softmax_options,
    std::conditional_t<Keep, bool_masked_softmax_options,
                       std::conditional_t<Masked, masked_softmax_options, softmax_options>>>;

/// Whether `Options` is one of the masked launchers' options types (and which).
template <class Options>
inline constexpr bool is_masked_options_v = std::is_same_v<Options, masked_softmax_options> ||
                                            std::is_same_v<Options, bool_masked_softmax_options> ||
                                            std::is_same_v<Options, biased_softmax_options>;
template <class Options>
inline constexpr bool has_keep_v = std::is_same_v<Options, bool_masked_softmax_options> ||
                                   std::is_same_v<Options, biased_softmax_options>;
template <class Options>
inline constexpr bool has_bias_v = std::is_same_v<Options, biased_softmax_options>;
/// The masked overloads of the public launchers: for masked_softmax_options,
/// bool_masked_softmax_options and biased_softmax_options, each an exact match.
template <class Options>
using if_masked_options = std::enable_if_t<is_masked_options_v<Options>, int>;

/// A call's op arguments: `b` and, where the call is masked, its masks (masked_args; with a
/// boolean mask, keep_args; with a bias, bias_args).
template <bool Masked, bool Keep, bool Bias, class Base, class Options>
args_with_masks<Masked, Base, Keep, Bias> call_args(Base const& b, Options const& o,
                                                    std::int64_t rows, std::int64_t cols) noexcept {
  if constexpr (Bias) {
    return {{{b, prefix_mask::of(o, rows, cols)}, element_mask::of(o)}, bias_operand::of(o)};
  } else if constexpr (Keep) {
    return {{b, prefix_mask::of(o, rows, cols)}, element_mask::of(o)};
  } else if constexpr (Masked) {
    return {b, prefix_mask::of(o, rows, cols)};
  } else {
    return b;
  }
}

/// The message of a rule on broadcast strides `st` (`name`: the option's) into `b` (`n` bytes):
/// `what` says the rule ("has a negative stride", "span more than 2^62 bytes").
inline void explain_strides(char* b, std::size_t n, const char* name, broadcast_strides const& st,
                            const char* what) noexcept {
  std::snprintf(b, n, "options.%s (%lld, %lld, %lld) %s", name, static_cast<long long>(st.batch),
                static_cast<long long>(st.head), static_cast<long long>(st.query), what);
}

/// The message of a masked_softmax_options rule into `b` (`n` bytes).
inline void explain_masks(option_rule r, masked_softmax_options const& o, char* b,
                          std::size_t n) noexcept {
  switch (r) {
    case option_rule::bad_layout:
      std::snprintf(b, n,
                    "options.heads (%lld) and options.queries (%lld) must be >= 1 and divide rows "
                    "as rows = batches * heads * queries",
                    static_cast<long long>(o.heads), static_cast<long long>(o.queries));
      break;
    case option_rule::lengths_misaligned:
      std::snprintf(b, n, "options.lengths (%p) is not 4-byte aligned",
                    static_cast<void const*>(o.lengths));
      break;
    case option_rule::negative_stride:
      explain_strides(b, n, "lengths_strides", o.lengths_strides, "has a negative stride");
      break;
    case option_rule::lengths_too_large:
      explain_strides(b, n, "lengths_strides", o.lengths_strides, "span more than 2^62 bytes");
      break;
    case option_rule::lengths_overlaps:
      std::snprintf(b, n, "options.lengths (%p) shares memory with the output or options.row_lse",
                    static_cast<void const*>(o.lengths));
      break;
    default:
      break;
  }
}

/// The message of a biased_softmax_options rule into `b` (`n` bytes).
inline void explain_bias(option_rule r, biased_softmax_options const& o, char* b,
                         std::size_t n) noexcept {
  switch (r) {
    case option_rule::bad_bias_type:
      std::snprintf(b, n, "options.bias_dtype (%d) is not a bias_type value",
                    static_cast<int>(o.bias_dtype));
      break;
    case option_rule::bias_misaligned:
      std::snprintf(b, n, "options.bias (%p) is not aligned to its element size (bias_dtype %s)",
                    o.bias, o.bias_dtype == bias_type::f32 ? "f32" : "input");
      break;
    case option_rule::bias_negative_stride:
      explain_strides(b, n, "bias_strides", o.bias_strides, "has a negative stride");
      break;
    case option_rule::bias_too_large:
      explain_strides(b, n, "bias_strides", o.bias_strides, "span more than 2^62 bytes");
      break;
    case option_rule::bias_overlaps:
      std::snprintf(b, n, "options.bias (%p) shares memory with the output or options.row_lse",
                    o.bias);
      break;
    default:
      break;
  }
}

/// The message of a bool_masked_softmax_options rule into `b` (`n` bytes).
inline void explain_keep(option_rule r, bool_masked_softmax_options const& o, char* b,
                         std::size_t n) noexcept {
  switch (r) {
    case option_rule::keep_negative_stride:
      explain_strides(b, n, "keep_strides", o.keep_strides, "has a negative stride");
      break;
    case option_rule::keep_too_large:
      explain_strides(b, n, "keep_strides", o.keep_strides, "span more than 2^62 bytes");
      break;
    case option_rule::keep_overlaps:
      std::snprintf(b, n, "options.keep (%p) shares memory with the output or options.row_lse",
                    static_cast<void const*>(o.keep));
      break;
    default:
      explain_masks(r, o, b, n);
      break;
  }
}

template <class Options>
const char* explain_options(option_rule r, Options const& o) noexcept {
  char* b = explain_buffer();
  constexpr std::size_t n = explain_buffer_size;
  switch (r) {
    case option_rule::ok:
      return nullptr;
    case option_rule::scale_not_finite:
      std::snprintf(b, n, "options.scale (%g) is not finite", static_cast<double>(o.scale));
      break;
    case option_rule::row_scale_misaligned:
      std::snprintf(b, n, "options.row_scale (%p) is not 4-byte aligned",
                    static_cast<void const*>(o.row_scale));
      break;
    case option_rule::row_lse_misaligned:
      std::snprintf(b, n, "options.row_lse (%p) is not 4-byte aligned",
                    static_cast<void const*>(o.row_lse));
      break;
    case option_rule::bad_empty_rows:
      std::snprintf(b, n, "options.empty (%d) is not an empty_rows value",
                    static_cast<int>(o.empty));
      break;
    case option_rule::row_scale_overlaps:
      std::snprintf(b, n, "options.row_scale (%p) shares memory with the output",
                    static_cast<void const*>(o.row_scale));
      break;
    case option_rule::row_lse_overlaps:
      std::snprintf(b, n, "options.row_lse (%p) shares memory with a tensor or options.row_scale",
                    static_cast<void const*>(o.row_lse));
      break;
    default:
      if constexpr (std::is_same_v<Options, biased_softmax_options>) {
        if (r >= option_rule::bad_bias_type) {
          explain_bias(r, o, b, n);
        } else {
          explain_keep(r, o, b, n);
        }
      } else if constexpr (std::is_same_v<Options, bool_masked_softmax_options>) {
        explain_keep(r, o, b, n);
      } else if constexpr (std::is_same_v<Options, masked_softmax_options>) {
        explain_masks(r, o, b, n);
      }
      break;
  }
  return b;
}

/// Whether a fused call may write `Out` from `T`: the same type, or float from a 16-bit type and
/// the reverse.
template <class T, class Out>
inline constexpr bool output_pair_v = std::is_same_v<T, Out> ||
                                      (supported_type_v<T> && supported_type_v<Out> &&
                                       (std::is_same_v<T, float> != std::is_same_v<Out, float>));

/// One call of a fused forward launcher: forward_call's tensors, the options and the op's
/// arguments; `Masked`: with masked_softmax_options (`Keep`: bool_masked_softmax_options;
/// `Bias`: biased_softmax_options); y of `Out`.
template <class T, bool Log, bool Masked = false, bool Keep = false, bool Bias = false,
          class Out = T>
struct fused_forward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  static_assert(output_pair_v<T, Out>,
                "rowsoftmax: y must be of x's type, or float where x is 16-bit, or 16-bit where x "
                "is float");
  using op = fused_forward_op<T, Log, Masked, Keep, Bias, Out>;
  static constexpr bool masked = Masked;
  static constexpr bool keep = Keep;
  static constexpr bool bias = Bias;
  static constexpr char const* names[2] = {"x", "y"};
  tensor_arg tensors[2];
  options_of<Masked, Keep, Bias> options;
  typename op::args args;
  fused_forward_call(T const* x, std::int64_t x_row_stride, Out const* y, std::int64_t y_row_stride,
                     std::int64_t rows, std::int64_t cols,
                     options_of<Masked, Keep, Bias> const& o) noexcept
      : tensors{{x, x_row_stride, false, sizeof(T)}, {y, y_row_stride, true, sizeof(Out)}},
        options(o),
        args(call_args<Masked, Keep, Bias>(
            typename op::base_args{x, x_row_stride, const_cast<Out*>(y), y_row_stride, rows, cols,
                                   fused_params::of(o), 0},
            o, rows, cols)) {}
  bool options_ok() const noexcept { return check_call_options(*this) == option_rule::ok; }
};

/// One call of a fused backward launcher (`Bias`: with biased_softmax_options, whose bias it
/// does not read): dy and y of the forward's output type `Out`, dx of its input type T.
template <class T, bool Log, bool Masked = false, bool Keep = false, bool Bias = false,
          class Out = T>
struct fused_backward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  static_assert(output_pair_v<T, Out>,
                "rowsoftmax: dy and y must be of dx's type, or float where dx is 16-bit, or "
                "16-bit where dx is float");
  using op = fused_backward_op<Out, Log, Masked, Keep, Bias, T>;
  static constexpr bool masked = Masked;
  static constexpr bool keep = Keep;
  static constexpr bool bias = false;  // no bias rules: backward does not read it
  static constexpr char const* names[3] = {"dy", "y", "dx"};
  tensor_arg tensors[3];
  options_of<Masked, Keep, Bias> options;
  typename op::args args;
  fused_backward_call(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                      std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                      std::int64_t rows, std::int64_t cols,
                      options_of<Masked, Keep, Bias> const& o) noexcept
      : tensors{{dy, dy_row_stride, false, sizeof(Out)},
                {y, y_row_stride, false, sizeof(Out)},
                {dx, dx_row_stride, true, sizeof(T)}},
        options(o),
        args(call_args<Masked, Keep, false>(
            typename op::base_args{dy, dy_row_stride, y, y_row_stride, const_cast<T*>(dx),
                                   dx_row_stride, rows, cols, fused_params::of(o), 0},
            o, rows, cols)) {}
  bool options_ok() const noexcept { return check_call_options(*this) == option_rule::ok; }
};

/// A fused forward launch (`Masked` from the options' type): the launchers below in one place.
template <bool Log, class T, class Out, class Options>
cudaError_t launch_fused_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                                 std::int64_t x_row_stride, Out* y, std::int64_t y_row_stride,
                                 std::int64_t rows, std::int64_t cols, Options const& options,
                                 cudaStream_t stream) noexcept {
  constexpr bool masked = is_masked_options_v<Options>, keep = has_keep_v<Options>;
  return launch_call(fused_forward_call<T, Log, masked, keep, has_bias_v<Options>, Out>(
                         x, x_row_stride, y, y_row_stride, rows, cols, options),
                     workspace, workspace_bytes, stream);
}

template <bool Log, class T, class Out, class Options>
cudaError_t launch_fused_backward(void* workspace, std::size_t* workspace_bytes, Out const* dy,
                                  std::int64_t dy_row_stride, Out const* y,
                                  std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                  std::int64_t rows, std::int64_t cols, Options const& options,
                                  cudaStream_t stream) noexcept {
  constexpr bool masked = is_masked_options_v<Options>, keep = has_keep_v<Options>;
  return launch_call(
      fused_backward_call<T, Log, masked, keep, has_bias_v<Options>, Out>(
          dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options),
      workspace, workspace_bytes, stream);
}

template <class Call>
const char* explain_fused(Call const& call) noexcept {
  if (const char* why = explain_tensors(call)) return why;
  return explain_options(check_call_options(call), call.options);
}

}  // namespace detail

/// @brief Fused row-wise softmax, strided rows: `y[i, :] = softmax(s_i * x[i, :])`, with the
/// options' scale, per-row scale, row log-sum-exp output and empty-row policy (softmax_options
/// says each). One read of x and one write of y, planned and tiered as the plain launcher.
///
/// @param x, x_row_stride, y, y_row_stride, rows, cols, stream  as for the plain softmax_forward;
///                 y's element type `Out` is T's or another (every fused launcher): float where
///                 T is __half or __nv_bfloat16, either 16-bit type where T is float
///                 (`torch.softmax(x, -1, dtype=...)`), computed in float and rounded once to
///                 Out, y aligned to its own element; then not in place, and with vectors only
///                 where y's rows start as many elements into 16 / sizeof(T)-element windows as
///                 x's (else element access)
/// @param options  the fused options; `softmax_options{}` computes plain softmax (through the
///                 fused kernels)
/// @return as for the plain launcher; cudaErrorInvalidValue also for a non-finite scale, a
///         misaligned row_scale or row_lse, an empty_rows value out of range, or y of another
///         type at x's address, in which case nothing is launched or written.
///
/// Asynchronous, allocation-free, graph-capturable; row_scale and row_lse are read and written
/// when the kernel runs. Rows too long for a cluster are handled as by the plain launcher (the
/// workspace kept in y's first row where out of place, see there).
///
/// @code
/// rowsoftmax::softmax_options o;
/// o.scale = 1.0f / temperature;
/// rowsoftmax::softmax_forward(logits, vocab, probs, vocab, batch, vocab, o, stream);
/// @endcode
template <class T, class Out>
cudaError_t softmax_forward(T const* x, std::int64_t x_row_stride, Out* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            softmax_options const& options,
                            cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_forward<false>(nullptr, nullptr, x, x_row_stride, y, y_row_stride,
                                             rows, cols, options, stream);
}

/// @brief Masked softmax, strided rows: the fused softmax_forward over the columns each row's
/// prefix masks keep (masked_softmax_options: lengths, causal) and, where `options` is a
/// bool_masked_softmax_options, its boolean mask keeps; the others written as 0, their values
/// not used (those past a prefix mask's end not read); with a biased_softmax_options, the
/// logits s * x + bias. cudaErrorInvalidValue also for the masks' and the bias's rules
/// (masked_softmax_options, bool_masked_softmax_options, biased_softmax_options), nothing
/// launched then. `Options`: masked_softmax_options, bool_masked_softmax_options or
/// biased_softmax_options (the masked overloads of every fused launcher, plan query and
/// explanation below take any of them; backward takes the forward's and ignores the bias).
///
/// @code
/// rowsoftmax::masked_softmax_options o;  // scores: batch x heads x queries rows of keys
/// o.scale = 1.0f / sqrtf(head_dim);
/// o.heads = heads;
/// o.queries = queries;
/// o.causal = true;
/// o.diagonal = keys - queries;  // bottom-right aligned
/// o.lengths = key_lengths;      // one a batch: lengths_strides' default
/// rowsoftmax::softmax_forward(s, keys, p, keys, batch * heads * queries, keys, o, stream);
///
/// rowsoftmax::bool_masked_softmax_options m;  // an attention mask, true = takes part
/// m.heads = heads;
/// m.queries = queries;
/// m.keep = attn_mask;                        // (batch, 1, queries, keys), broadcast over heads
/// m.keep_strides = {queries * keys, 0, keys};
/// rowsoftmax::softmax_forward(s, keys, p, keys, batch * heads * queries, keys, m, stream);
///
/// rowsoftmax::biased_softmax_options b;  // ALiBi: a float bias row a head
/// b.heads = heads;
/// b.queries = queries;
/// b.bias = alibi;                          // (heads, keys) floats
/// b.bias_dtype = rowsoftmax::bias_type::f32;
/// b.bias_strides = {0, keys, 0};
/// rowsoftmax::softmax_forward(s, keys, p, keys, batch * heads * queries, keys, b, stream);
/// @endcode
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t softmax_forward(T const* x, std::int64_t x_row_stride, Out* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            Options const& options, cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_forward<false>(nullptr, nullptr, x, x_row_stride, y, y_row_stride,
                                             rows, cols, options, stream);
}

/// @brief Fused softmax with a workspace (the convention of the plain workspace overload).
template <class T, class Out>
cudaError_t softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                            std::int64_t x_row_stride, Out* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols, softmax_options const& options,
                            cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_forward<false>(workspace, workspace_bytes, x, x_row_stride, y,
                                             y_row_stride, rows, cols, options, stream);
}

/// @brief Masked softmax with a workspace.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                            std::int64_t x_row_stride, Out* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols, Options const& options,
                            cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_forward<false>(workspace, workspace_bytes, x, x_row_stride, y,
                                             y_row_stride, rows, cols, options, stream);
}

/// @brief Row-wise log-softmax, strided rows: `y[i, :] = log_softmax(s_i * x[i, :])`, computed
/// as (z - M) - ln S (softmax_options). Otherwise as the fused softmax_forward; the overload
/// without options is plain log-softmax. Matches torch.log_softmax (a NaN or +inf makes the row
/// NaN, a row of only -inf is NaN or, with empty_rows::zero, -inf).
template <class T, class Out>
cudaError_t log_softmax_forward(T const* x, std::int64_t x_row_stride, Out* y,
                                std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                softmax_options const& options,
                                cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_forward<true>(nullptr, nullptr, x, x_row_stride, y, y_row_stride,
                                            rows, cols, options, stream);
}

/// @brief Masked log-softmax, strided rows: the masked columns written as -inf, their values not
/// used (masked_softmax_options).
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t log_softmax_forward(T const* x, std::int64_t x_row_stride, Out* y,
                                std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                Options const& options, cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_forward<true>(nullptr, nullptr, x, x_row_stride, y, y_row_stride,
                                            rows, cols, options, stream);
}

/// @brief Plain log-softmax (default options), strided rows.
template <class T, class Out>
cudaError_t log_softmax_forward(T const* x, std::int64_t x_row_stride, Out* y,
                                std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                cudaStream_t stream = nullptr) noexcept {
  return log_softmax_forward(x, x_row_stride, y, y_row_stride, rows, cols, softmax_options{},
                             stream);
}

/// @brief Log-softmax with a workspace (the convention of the plain workspace overload).
template <class T, class Out>
cudaError_t log_softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                                std::int64_t x_row_stride, Out* y, std::int64_t y_row_stride,
                                std::int64_t rows, std::int64_t cols,
                                softmax_options const& options,
                                cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_forward<true>(workspace, workspace_bytes, x, x_row_stride, y,
                                            y_row_stride, rows, cols, options, stream);
}

/// @brief Masked log-softmax with a workspace.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t log_softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                                std::int64_t x_row_stride, Out* y, std::int64_t y_row_stride,
                                std::int64_t rows, std::int64_t cols, Options const& options,
                                cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_forward<true>(workspace, workspace_bytes, x, x_row_stride, y,
                                            y_row_stride, rows, cols, options, stream);
}

/// @brief Backward of the fused softmax_forward with the same options: `dx = s_i * y * (dy -
/// sum(dy * y))` along each row (the gradient with respect to x; row_lse is not used). dy, y and
/// dx as for the plain softmax_backward, in place allowed likewise; dy and y of the forward's
/// output type `Out`, dx of its input type T (in place only where they are one type).
template <class T, class Out>
cudaError_t softmax_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                             std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols, softmax_options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_backward<false>(nullptr, nullptr, dy, dy_row_stride, y, y_row_stride,
                                              dx, dx_row_stride, rows, cols, options, stream);
}

/// @brief Backward of the masked softmax_forward with the same options: over the kept columns,
/// dx 0 in the others, whose dy and y are not used.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t softmax_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                             std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols, Options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_backward<false>(nullptr, nullptr, dy, dy_row_stride, y, y_row_stride,
                                              dx, dx_row_stride, rows, cols, options, stream);
}

/// @brief Fused softmax backward with a workspace.
template <class T, class Out>
cudaError_t softmax_backward(void* workspace, std::size_t* workspace_bytes, Out const* dy,
                             std::int64_t dy_row_stride, Out const* y, std::int64_t y_row_stride,
                             T* dx, std::int64_t dx_row_stride, std::int64_t rows,
                             std::int64_t cols, softmax_options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_backward<false>(workspace, workspace_bytes, dy, dy_row_stride, y,
                                              y_row_stride, dx, dx_row_stride, rows, cols, options,
                                              stream);
}

/// @brief Masked softmax backward with a workspace.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t softmax_backward(void* workspace, std::size_t* workspace_bytes, Out const* dy,
                             std::int64_t dy_row_stride, Out const* y, std::int64_t y_row_stride,
                             T* dx, std::int64_t dx_row_stride, std::int64_t rows,
                             std::int64_t cols, Options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_backward<false>(workspace, workspace_bytes, dy, dy_row_stride, y,
                                              y_row_stride, dx, dx_row_stride, rows, cols, options,
                                              stream);
}

/// @brief Backward of log_softmax_forward with the same options: `dx = s_i * (dy - exp(y) *
/// sum(dy))` along each row, y being the forward's output. Matches
/// torch.ops.aten._log_softmax_backward_data (times the scale).
template <class T, class Out>
cudaError_t log_softmax_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols,
                                 softmax_options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_backward<true>(nullptr, nullptr, dy, dy_row_stride, y, y_row_stride,
                                             dx, dx_row_stride, rows, cols, options, stream);
}

/// @brief Backward of the masked log_softmax_forward with the same options: over the kept
/// columns (sum(dy) over them only, see masked_softmax_options), dx 0 in the others.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t log_softmax_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols, Options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  return detail::launch_fused_backward<true>(nullptr, nullptr, dy, dy_row_stride, y, y_row_stride,
                                             dx, dx_row_stride, rows, cols, options, stream);
}

/// @brief Plain log-softmax backward (default options), strided rows.
template <class T, class Out>
cudaError_t log_softmax_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols,
                                 cudaStream_t stream = nullptr) noexcept {
  return log_softmax_backward(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols,
                              softmax_options{}, stream);
}

/// @brief Log-softmax backward with a workspace.
template <class T, class Out>
cudaError_t log_softmax_backward(void* workspace, std::size_t* workspace_bytes, Out const* dy,
                                 std::int64_t dy_row_stride, Out const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols,
                                 softmax_options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_backward<true>(workspace, workspace_bytes, dy, dy_row_stride, y,
                                             y_row_stride, dx, dx_row_stride, rows, cols, options,
                                             stream);
}

/// @brief Masked log-softmax backward with a workspace.
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t log_softmax_backward(void* workspace, std::size_t* workspace_bytes, Out const* dy,
                                 std::int64_t dy_row_stride, Out const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols, Options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_fused_backward<true>(workspace, workspace_bytes, dy, dy_row_stride, y,
                                             y_row_stride, dx, dx_row_stride, rows, cols, options,
                                             stream);
}

namespace detail {

template <class T, class Out, class Options>
cudaError_t fused_forward_plan(T const* x, std::int64_t x_row_stride, Out const* y,
                               std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                               Options const& options, bool log, plan* out,
                               bool with_workspace) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  constexpr bool masked = is_masked_options_v<Options>, keep = has_keep_v<Options>,
                 bias = has_bias_v<Options>;
  return log ? checked_plan(fused_forward_call<T, true, masked, keep, bias, Out>(
                                x, x_row_stride, y, y_row_stride, rows, cols, options),
                            with_workspace, out)
             : checked_plan(fused_forward_call<T, false, masked, keep, bias, Out>(
                                x, x_row_stride, y, y_row_stride, rows, cols, options),
                            with_workspace, out);
}

template <class T, class Out, class Options>
cudaError_t fused_backward_plan(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                                std::int64_t rows, std::int64_t cols, Options const& options,
                                bool log, plan* out, bool with_workspace) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  constexpr bool masked = is_masked_options_v<Options>, keep = has_keep_v<Options>,
                 bias = has_bias_v<Options>;
  return log ? checked_plan(
                   fused_backward_call<T, true, masked, keep, bias, Out>(
                       dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options),
                   with_workspace, out)
             : checked_plan(
                   fused_backward_call<T, false, masked, keep, bias, Out>(
                       dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options),
                   with_workspace, out);
}

}  // namespace detail

/// @brief The plan a fused forward launcher would launch (`log`: log_softmax_forward); see
/// softmax_forward_plan. The options are checked as the launcher checks them.
template <class T, class Out>
cudaError_t fused_forward_plan(T const* x, std::int64_t x_row_stride, Out const* y,
                               std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                               softmax_options const& options, bool log, plan* out,
                               bool with_workspace = false) noexcept {
  return detail::fused_forward_plan(x, x_row_stride, y, y_row_stride, rows, cols, options, log, out,
                                    with_workspace);
}

/// @brief The plan a masked forward launcher would launch (`log`: log_softmax_forward).
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t fused_forward_plan(T const* x, std::int64_t x_row_stride, Out const* y,
                               std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                               Options const& options, bool log, plan* out,
                               bool with_workspace = false) noexcept {
  return detail::fused_forward_plan(x, x_row_stride, y, y_row_stride, rows, cols, options, log, out,
                                    with_workspace);
}

/// @brief The plan a fused backward launcher would launch (`log`: log_softmax_backward).
template <class T, class Out>
cudaError_t fused_backward_plan(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                                std::int64_t rows, std::int64_t cols,
                                softmax_options const& options, bool log, plan* out,
                                bool with_workspace = false) noexcept {
  return detail::fused_backward_plan(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows,
                                     cols, options, log, out, with_workspace);
}

/// @brief The plan a masked backward launcher would launch (`log`: log_softmax_backward).
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
cudaError_t fused_backward_plan(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                                std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                                std::int64_t rows, std::int64_t cols, Options const& options,
                                bool log, plan* out, bool with_workspace = false) noexcept {
  return detail::fused_backward_plan(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows,
                                     cols, options, log, out, with_workspace);
}

/// @brief Why a fused forward launcher (softmax_forward or log_softmax_forward with options)
/// would refuse these arguments: the tensors' rules as explain_forward says them, then the
/// options'; nullptr where it accepts them. Compiles no kernel, touches no device.
template <class T, class Out>
const char* explain_forward(T const* x, std::int64_t x_row_stride, Out const* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            softmax_options const& options) noexcept {
  return detail::explain_fused(detail::fused_forward_call<T, false, false, false, false, Out>(
      x, x_row_stride, y, y_row_stride, rows, cols, options));
}

/// @brief Why a masked forward launcher would refuse these arguments (nullptr: it accepts them).
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
const char* explain_forward(T const* x, std::int64_t x_row_stride, Out const* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            Options const& options) noexcept {
  return detail::explain_fused(
      detail::fused_forward_call<T, false, true, detail::has_keep_v<Options>,
                                 detail::has_bias_v<Options>, Out>(x, x_row_stride, y, y_row_stride,
                                                                   rows, cols, options));
}

/// @brief Why a fused backward launcher would refuse these arguments (nullptr: it accepts them).
template <class T, class Out>
const char* explain_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                             std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols,
                             softmax_options const& options) noexcept {
  return detail::explain_fused(detail::fused_backward_call<T, false, false, false, false, Out>(
      dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options));
}

/// @brief Why a masked backward launcher would refuse these arguments (nullptr: it accepts them).
template <class T, class Out, class Options, detail::if_masked_options<Options> = 0>
const char* explain_backward(Out const* dy, std::int64_t dy_row_stride, Out const* y,
                             std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols,
                             Options const& options) noexcept {
  return detail::explain_fused(
      detail::fused_backward_call<T, false, true, detail::has_keep_v<Options>,
                                  detail::has_bias_v<Options>, Out>(
          dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options));
}

}  // namespace rowsoftmax
