// SPDX-License-Identifier: Apache-2.0
// Public fused launchers: softmax and log-softmax, forward and backward, with a scale (one a
// call and one a row), a row log-sum-exp output and an empty-row policy (softmax_options), in
// the one read and one write of plain softmax, through every tier.
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
};

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
    return ranges_meet(
        reinterpret_cast<std::uintptr_t>(p), row_floats, reinterpret_cast<std::uintptr_t>(x.ptr),
        (static_cast<std::uint64_t>(rows - 1) * static_cast<std::uint64_t>(x.stride) +
         static_cast<std::uint64_t>(cols)) *
            elem_size);
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

/// check_options for a call (fused_forward_call, fused_backward_call).
template <class Call>
option_rule check_call_options(Call const& call) noexcept {
  return check_options(call.options, Call::op::dir, call.tensors,
                       sizeof(typename Call::op::value_type), call.args.rows, call.args.cols);
}

inline const char* explain_options(option_rule r, softmax_options const& o) noexcept {
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
  }
  return b;
}

/// One call of a fused forward launcher: forward_call's tensors, the options and the op's
/// arguments.
template <class T, bool Log>
struct fused_forward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  using op = fused_forward_op<T, Log>;
  static constexpr char const* names[2] = {"x", "y"};
  tensor_arg tensors[2];
  softmax_options options;
  typename op::args args;
  fused_forward_call(T const* x, std::int64_t x_row_stride, T const* y, std::int64_t y_row_stride,
                     std::int64_t rows, std::int64_t cols, softmax_options const& o) noexcept
      : tensors{{x, x_row_stride, false}, {y, y_row_stride, true}},
        options(o),
        args{x, x_row_stride, const_cast<T*>(y), y_row_stride, rows, cols, fused_params::of(o), 0} {
  }
  bool options_ok() const noexcept { return check_call_options(*this) == option_rule::ok; }
};

/// One call of a fused backward launcher.
template <class T, bool Log>
struct fused_backward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  using op = fused_backward_op<T, Log>;
  static constexpr char const* names[3] = {"dy", "y", "dx"};
  tensor_arg tensors[3];
  softmax_options options;
  typename op::args args;
  fused_backward_call(T const* dy, std::int64_t dy_row_stride, T const* y,
                      std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                      std::int64_t rows, std::int64_t cols, softmax_options const& o) noexcept
      : tensors{{dy, dy_row_stride, false}, {y, y_row_stride, false}, {dx, dx_row_stride, true}},
        options(o),
        args{dy,   dy_row_stride,       y, y_row_stride, const_cast<T*>(dx), dx_row_stride, rows,
             cols, fused_params::of(o), 0} {}
  bool options_ok() const noexcept { return check_call_options(*this) == option_rule::ok; }
};

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
/// @param x, x_row_stride, y, y_row_stride, rows, cols, stream  as for the plain softmax_forward
/// @param options  the fused options; `softmax_options{}` computes plain softmax (through the
///                 fused kernels)
/// @return as for the plain launcher; cudaErrorInvalidValue also for a non-finite scale, a
///         misaligned row_scale or row_lse, or an empty_rows value out of range, in which case
///         nothing is launched or written.
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
template <class T>
cudaError_t softmax_forward(T const* x, std::int64_t x_row_stride, T* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols, softmax_options const& options,
                            cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(
      detail::fused_forward_call<T, false>(x, x_row_stride, y, y_row_stride, rows, cols, options),
      nullptr, nullptr, stream);
}

/// @brief Fused softmax with a workspace (the convention of the plain workspace overload).
template <class T>
cudaError_t softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                            std::int64_t x_row_stride, T* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols, softmax_options const& options,
                            cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(
      detail::fused_forward_call<T, false>(x, x_row_stride, y, y_row_stride, rows, cols, options),
      workspace, workspace_bytes, stream);
}

/// @brief Row-wise log-softmax, strided rows: `y[i, :] = log_softmax(s_i * x[i, :])`, computed
/// as (z - M) - ln S (softmax_options). Otherwise as the fused softmax_forward; the overload
/// without options is plain log-softmax. Matches torch.log_softmax (a NaN or +inf makes the row
/// NaN, a row of only -inf is NaN or, with empty_rows::zero, -inf).
template <class T>
cudaError_t log_softmax_forward(T const* x, std::int64_t x_row_stride, T* y,
                                std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                softmax_options const& options,
                                cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(
      detail::fused_forward_call<T, true>(x, x_row_stride, y, y_row_stride, rows, cols, options),
      nullptr, nullptr, stream);
}

/// @brief Plain log-softmax (default options), strided rows.
template <class T>
cudaError_t log_softmax_forward(T const* x, std::int64_t x_row_stride, T* y,
                                std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                cudaStream_t stream = nullptr) noexcept {
  return log_softmax_forward(x, x_row_stride, y, y_row_stride, rows, cols, softmax_options{},
                             stream);
}

/// @brief Log-softmax with a workspace (the convention of the plain workspace overload).
template <class T>
cudaError_t log_softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                                std::int64_t x_row_stride, T* y, std::int64_t y_row_stride,
                                std::int64_t rows, std::int64_t cols,
                                softmax_options const& options,
                                cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(
      detail::fused_forward_call<T, true>(x, x_row_stride, y, y_row_stride, rows, cols, options),
      workspace, workspace_bytes, stream);
}

/// @brief Backward of the fused softmax_forward with the same options: `dx = s_i * y * (dy -
/// sum(dy * y))` along each row (the gradient with respect to x; row_lse is not used). dy, y and
/// dx as for the plain softmax_backward, in place allowed likewise.
template <class T>
cudaError_t softmax_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                             std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols, softmax_options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(
      detail::fused_backward_call<T, false>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride,
                                            rows, cols, options),
      nullptr, nullptr, stream);
}

/// @brief Fused softmax backward with a workspace.
template <class T>
cudaError_t softmax_backward(void* workspace, std::size_t* workspace_bytes, T const* dy,
                             std::int64_t dy_row_stride, T const* y, std::int64_t y_row_stride,
                             T* dx, std::int64_t dx_row_stride, std::int64_t rows,
                             std::int64_t cols, softmax_options const& options,
                             cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(
      detail::fused_backward_call<T, false>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride,
                                            rows, cols, options),
      workspace, workspace_bytes, stream);
}

/// @brief Backward of log_softmax_forward with the same options: `dx = s_i * (dy - exp(y) *
/// sum(dy))` along each row, y being the forward's output. Matches
/// torch.ops.aten._log_softmax_backward_data (times the scale).
template <class T>
cudaError_t log_softmax_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols,
                                 softmax_options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(
      detail::fused_backward_call<T, true>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride,
                                           rows, cols, options),
      nullptr, nullptr, stream);
}

/// @brief Plain log-softmax backward (default options), strided rows.
template <class T>
cudaError_t log_softmax_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                                 std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                                 std::int64_t rows, std::int64_t cols,
                                 cudaStream_t stream = nullptr) noexcept {
  return log_softmax_backward(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols,
                              softmax_options{}, stream);
}

/// @brief Log-softmax backward with a workspace.
template <class T>
cudaError_t log_softmax_backward(void* workspace, std::size_t* workspace_bytes, T const* dy,
                                 std::int64_t dy_row_stride, T const* y, std::int64_t y_row_stride,
                                 T* dx, std::int64_t dx_row_stride, std::int64_t rows,
                                 std::int64_t cols, softmax_options const& options,
                                 cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(
      detail::fused_backward_call<T, true>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride,
                                           rows, cols, options),
      workspace, workspace_bytes, stream);
}

/// @brief The plan a fused forward launcher would launch (`log`: log_softmax_forward); see
/// softmax_forward_plan. The options are checked as the launcher checks them.
template <class T>
cudaError_t fused_forward_plan(T const* x, std::int64_t x_row_stride, T const* y,
                               std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                               softmax_options const& options, bool log, plan* out,
                               bool with_workspace = false) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  return log ? detail::checked_plan(detail::fused_forward_call<T, true>(
                                        x, x_row_stride, y, y_row_stride, rows, cols, options),
                                    with_workspace, out)
             : detail::checked_plan(detail::fused_forward_call<T, false>(
                                        x, x_row_stride, y, y_row_stride, rows, cols, options),
                                    with_workspace, out);
}

/// @brief The plan a fused backward launcher would launch (`log`: log_softmax_backward).
template <class T>
cudaError_t fused_backward_plan(T const* dy, std::int64_t dy_row_stride, T const* y,
                                std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                                std::int64_t rows, std::int64_t cols,
                                softmax_options const& options, bool log, plan* out,
                                bool with_workspace = false) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  return log ? detail::checked_plan(
                   detail::fused_backward_call<T, true>(dy, dy_row_stride, y, y_row_stride, dx,
                                                        dx_row_stride, rows, cols, options),
                   with_workspace, out)
             : detail::checked_plan(
                   detail::fused_backward_call<T, false>(dy, dy_row_stride, y, y_row_stride, dx,
                                                         dx_row_stride, rows, cols, options),
                   with_workspace, out);
}

/// @brief Why a fused forward launcher (softmax_forward or log_softmax_forward with options)
/// would refuse these arguments: the tensors' rules as explain_forward says them, then the
/// options'; nullptr where it accepts them. Compiles no kernel, touches no device.
template <class T>
const char* explain_forward(T const* x, std::int64_t x_row_stride, T const* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            softmax_options const& options) noexcept {
  return detail::explain_fused(
      detail::fused_forward_call<T, false>(x, x_row_stride, y, y_row_stride, rows, cols, options));
}

/// @brief Why a fused backward launcher would refuse these arguments (nullptr: it accepts them).
template <class T>
const char* explain_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                             std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols,
                             softmax_options const& options) noexcept {
  return detail::explain_fused(detail::fused_backward_call<T, false>(
      dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols, options));
}

}  // namespace rowsoftmax
