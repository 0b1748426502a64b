// SPDX-License-Identifier: Apache-2.0
// Public launchers: row-wise softmax forward and backward.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "detail/dispatch.cuh"
#include "detail/host.hpp"
#include "detail/ops.cuh"
#include "plan.hpp"

namespace rowsoftmax {

namespace detail {
template <class T>
inline constexpr bool supported_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// One call of a forward launcher (or its plan query or explanation): the tensors the checks
/// see, in argument order with the names errors give them, and the kernel's arguments. Every
/// public forward overload builds one and goes through the functions below.
template <class T>
struct forward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  using op = forward_op<T>;
  static constexpr char const* names[2] = {"x", "y"};
  tensor_arg tensors[2];
  typename op::args args;
  // `y` is const for the explanations, which never launch.
  forward_call(T const* x, std::int64_t x_row_stride, T const* y, std::int64_t y_row_stride,
               std::int64_t rows, std::int64_t cols) noexcept
      : tensors{{x, x_row_stride, false}, {y, y_row_stride, true}},
        args{x, x_row_stride, const_cast<T*>(y), y_row_stride, rows, cols} {}
  /// Rules beyond the tensors' (the fused calls' options): none.
  static constexpr bool options_ok() noexcept { return true; }
};

/// One call of a backward launcher: see forward_call.
template <class T>
struct backward_call {
  static_assert(supported_type_v<T>, "rowsoftmax: T must be float, __half or __nv_bfloat16");
  using op = backward_op<T>;
  static constexpr char const* names[3] = {"dy", "y", "dx"};
  tensor_arg tensors[3];
  typename op::args args;
  backward_call(T const* dy, std::int64_t dy_row_stride, T const* y, std::int64_t y_row_stride,
                T const* dx, std::int64_t dx_row_stride, std::int64_t rows,
                std::int64_t cols) noexcept
      : tensors{{dy, dy_row_stride, false}, {y, y_row_stride, false}, {dx, dx_row_stride, true}},
        args{dy, dy_row_stride, y, y_row_stride, const_cast<T*>(dx), dx_row_stride, rows, cols} {}
  static constexpr bool options_ok() noexcept { return true; }
};

/// The launchers' checks (validate, then the call's options), then the plan for the current
/// device (choose_plan); a default plan where there are no rows.
template <class Call>
cudaError_t checked_plan(Call const& call, bool with_workspace, plan* out) noexcept {
  using Op = typename Call::op;
  constexpr std::size_t elem = sizeof(typename Op::value_type);
  auto const& a = call.args;
  bool nothing = false;
  ROWSOFTMAX_TRY(validate(call.tensors, elem, a.rows, a.cols, &nothing));
  if (!call.options_ok()) return cudaErrorInvalidValue;
  if (nothing) {
    *out = plan{};
    return cudaSuccess;
  }
  int device = 0;
  ROWSOFTMAX_TRY(cudaGetDevice(&device));
  return choose_plan<Op>(Op::dir, layout_of(call.tensors, elem, a.rows, a.cols), a.rows, a.cols,
                         device, with_workspace, out);
}

/// The launchers' body. `workspace_bytes == nullptr`: the launchers without a workspace.
/// Otherwise the CUB convention: `workspace == nullptr` asks for the size (nothing launched),
/// else `*workspace_bytes` bytes at `workspace` may be used.
template <class Call>
cudaError_t launch_call(Call const& call, void* workspace, std::size_t* workspace_bytes,
                        cudaStream_t stream) noexcept {
  const bool with_workspace = workspace_bytes != nullptr;
  plan p;
  ROWSOFTMAX_TRY(checked_plan(call, with_workspace, &p));
  if (with_workspace && workspace == nullptr) {
    *workspace_bytes = static_cast<std::size_t>(p.workspace_bytes);
    return cudaSuccess;
  }
  if (call.args.rows == 0) return cudaSuccess;
  if (!workspace_holds(p, workspace, with_workspace ? *workspace_bytes : 0))
    return cudaErrorInvalidValue;
  return launch<typename Call::op>(p, call.args, workspace, stream);
}
}  // namespace detail

/// @brief Row-wise softmax, strided rows: `y[i, :] = softmax(x[i, :])` for i in [0, rows).
///
/// Row i of x starts at `x + i * x_row_stride` and holds `cols` elements; likewise for y.
///
/// @tparam T `float`, `__half` or `__nv_bfloat16`. Arithmetic is in float; the output is
///         rounded once to T. Each output row sums to 1 within T's rounding.
/// @param x             input, device memory, aligned to sizeof(T) (any element offset works;
///                      16-byte vectors are used when x and y rows are equally aligned)
/// @param x_row_stride  elements between row starts of x, >= cols
/// @param y             output, device memory; `y == x` with equal strides is allowed
///                      (in place); otherwise y may not share memory with x (decided exactly
///                      for equal strides, so interleaved rows pass; by address range for
///                      unequal ones)
/// @param y_row_stride  elements between row starts of y, >= cols
/// @param rows          rows >= 0; 0 is a successful no-op
/// @param cols          cols >= 1 (when rows > 0)
/// @param stream        the stream the kernel is enqueued on
/// @return cudaSuccess; cudaErrorInvalidValue for bad arguments (null pointer, misaligned
///         pointer, negative size, cols == 0, stride < cols, offsets overflowing int64, in-place
///         with unequal strides, an output overlapping an input otherwise), in which case nothing
///         is launched or written; or the error of the launch. Special values follow
///         torch.softmax: a NaN or +inf in a row makes the whole row NaN; a row of only -inf
///         is NaN; -inf elements of other rows give 0.
///
/// Asynchronous: never synchronizes, never allocates, safe to capture in a CUDA graph. The
/// first call per device (and per cluster kernel) queries device attributes once.
///
/// Rows longer than a cluster holds on chip (on sm_90 256K fp32 elements backward and 288K
/// forward, 512K bf16/fp16) are, on devices with clusters, planned as by the workspace overload;
/// out of place, where that splits them, the workspace it would ask for (a few tens of KB at most)
/// is kept in y's first row: zeroed on `stream` first, its softmax stored by a second kernel after
/// the split one, so that y's first row holds other values until the call's last kernel ends. The
/// launch is checked to fit the device before anything is enqueued; should it still fail (another
/// client taking the SMs, a device fault), the error is returned and y's first row may hold the
/// zeroed workspace. In place, such rows stream through a cluster instead (the overflow read
/// twice); on devices without clusters, through one CTA.
///
/// @code
/// rowsoftmax::softmax_forward(x, ld, y, ld, rows, cols, stream);
/// @endcode
template <class T>
cudaError_t softmax_forward(T const* x, std::int64_t x_row_stride, T* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(detail::forward_call<T>(x, x_row_stride, y, y_row_stride, rows, cols),
                             nullptr, nullptr, stream);
}

/// @brief Row-wise softmax of contiguous rows (row stride == cols). See the strided overload.
template <class T>
cudaError_t softmax_forward(T const* x, T* y, std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  return softmax_forward(x, cols, y, cols, rows, cols, stream);
}

/// @brief Softmax backward, strided rows: `dx = y * (dy - sum(dy * y))` along each row.
///
/// @tparam T `float`, `__half` or `__nv_bfloat16`; the row dot product and the arithmetic are
///         in float, dx is rounded once to T.
/// @param dy, y  inputs (upstream gradient and the forward output), device memory, aligned to
///               sizeof(T), with their row strides (>= cols)
/// @param dx     output; `dx == dy` or `dx == y` with equal strides is allowed (in place)
/// @param rows, cols, stream  as for softmax_forward
/// @return as for softmax_forward. A NaN in dy or y makes the row's dx NaN.
///
/// Reads dy and y once and writes dx once where a row fits on chip. Rows longer than a cluster
/// holds are planned as by softmax_forward: split with the workspace in dx's first row (which is
/// so written twice), or in place streamed; those longer than the device holds on chip, and
/// streamed ones, read part of dy and y twice. Asynchronous, allocation-free, graph-capturable.
template <class T>
cudaError_t softmax_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                             std::int64_t y_row_stride, T* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols,
                             cudaStream_t stream = nullptr) noexcept {
  return detail::launch_call(
      detail::backward_call<T>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols),
      nullptr, nullptr, stream);
}

/// @brief Softmax backward of contiguous rows (row stride == cols). See the strided overload.
template <class T>
cudaError_t softmax_backward(T const* dy, T const* y, T* dx, std::int64_t rows, std::int64_t cols,
                             cudaStream_t stream = nullptr) noexcept {
  return softmax_backward(dy, cols, y, cols, dx, cols, rows, cols, stream);
}

/// @brief Row-wise softmax with a workspace, strided rows (CUB's temporary-storage convention).
///
/// Call once with `workspace == nullptr`: sets `*workspace_bytes` to the bytes this call needs (0
/// when its plan needs none) and launches nothing. Call again with `workspace` pointing to at least
/// that many bytes of device memory (8-byte aligned) to run. A size of 0 still needs a non-null
/// `workspace` to run, as with CUB (a null one is the size query again): any pointer, which is then
/// not accessed. Rows longer than a cluster holds on chip (as for the overload without a
/// workspace) are then split over many CTAs that exchange partials through the workspace, so that
/// rows the device holds on chip are read once: bf16/fp16 forward rows of which the device holds
/// four in shared memory (up to about 3.2M elements on an H200, sm_90 and newer) are copied into
/// the shared memory of the CTAs (`algorithm::staged_split`); the others keep each CTA's share in
/// registers and shared memory (`algorithm::split`), as the overloads without a workspace do out of
/// place (keeping it in the output). Shorter rows run exactly as without a workspace and need none
/// (the size query gives 0), and so do a few lengths just beyond, which a cluster streams reading
/// little twice (on an H200: fp32 backward 262145-270336 columns, bf16/fp16 backward 524289-540672,
/// and fp32 forward 294913-417792 in launches of at least 198 rows). The workspace holds no state
/// between calls (it is zeroed on `stream` before each launch) but must not be shared by calls that
/// may run concurrently. The split kernels are cooperative launches: all their CTAs are resident at
/// once; where the device cannot guarantee that, the call streams instead.
///
/// @param workspace        device memory, or nullptr for the size query
/// @param workspace_bytes  in: bytes at `workspace`; out (size query): bytes needed. Not null.
/// @return as for the overload without a workspace; cudaErrorInvalidValue also for a workspace
///         smaller than asked for or not 8-byte aligned.
template <class T>
cudaError_t softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x,
                            std::int64_t x_row_stride, T* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(detail::forward_call<T>(x, x_row_stride, y, y_row_stride, rows, cols),
                             workspace, workspace_bytes, stream);
}

/// @brief Row-wise softmax with a workspace, contiguous rows. See the strided overload.
template <class T>
cudaError_t softmax_forward(void* workspace, std::size_t* workspace_bytes, T const* x, T* y,
                            std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  return softmax_forward(workspace, workspace_bytes, x, cols, y, cols, rows, cols, stream);
}

/// @brief Softmax backward with a workspace, strided rows. The workspace convention of
/// `softmax_forward` with a workspace; the rest as for `softmax_backward`.
template <class T>
cudaError_t softmax_backward(void* workspace, std::size_t* workspace_bytes, T const* dy,
                             std::int64_t dy_row_stride, T const* y, std::int64_t y_row_stride,
                             T* dx, std::int64_t dx_row_stride, std::int64_t rows,
                             std::int64_t cols, cudaStream_t stream = nullptr) noexcept {
  if (workspace_bytes == nullptr) return cudaErrorInvalidValue;
  return detail::launch_call(
      detail::backward_call<T>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols),
      workspace, workspace_bytes, stream);
}

/// @brief Softmax backward with a workspace, contiguous rows. See the strided overload.
template <class T>
cudaError_t softmax_backward(void* workspace, std::size_t* workspace_bytes, T const* dy, T const* y,
                             T* dx, std::int64_t rows, std::int64_t cols,
                             cudaStream_t stream = nullptr) noexcept {
  return softmax_backward(workspace, workspace_bytes, dy, cols, y, cols, dx, cols, rows, cols,
                          stream);
}

/// @brief The plan `softmax_forward` would launch for these arguments on the current device.
///
/// Validates like the launcher (same errors) and fills `*out`; launches nothing. For rows == 0
/// `*out` is a default plan. `with_workspace`: the plan of the workspace overload (its
/// `workspace_bytes` is the size that overload asks for). Queries the device (cached), so it needs
/// a GPU; for a device you do not have, call `plan_for` with hand-made `device_limits`.
template <class T>
cudaError_t softmax_forward_plan(T const* x, std::int64_t x_row_stride, T const* y,
                                 std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                                 plan* out, bool with_workspace = false) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  return detail::checked_plan(detail::forward_call<T>(x, x_row_stride, y, y_row_stride, rows, cols),
                              with_workspace, out);
}

/// @brief The plan `softmax_backward` would launch for these arguments on the current device.
/// See softmax_forward_plan.
template <class T>
cudaError_t softmax_backward_plan(T const* dy, std::int64_t dy_row_stride, T const* y,
                                  std::int64_t y_row_stride, T const* dx,
                                  std::int64_t dx_row_stride, std::int64_t rows, std::int64_t cols,
                                  plan* out, bool with_workspace = false) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  return detail::checked_plan(
      detail::backward_call<T>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols),
      with_workspace, out);
}

/// @brief The limits the planner uses for `device` (SM count, compute capability, largest
/// cluster size, shared memory, and how many clusters of each size it runs at once), queried
/// once per device per process and cached, thread-safely.
inline cudaError_t query_device_limits(int device, device_limits* out) noexcept {
  if (out == nullptr) return cudaErrorInvalidValue;
  return detail::cached_device_limits(device, out);
}

namespace detail {
inline const char* null_workspace_bytes() noexcept {
  return "workspace_bytes is null: it must point to the workspace's size in bytes";
}

/// The sentence for the launchers' argument checks (check_args), without the workspace's.
template <class Call>
const char* explain_tensors(Call const& call) noexcept {
  constexpr std::size_t elem = sizeof(typename Call::op::value_type);
  auto const& a = call.args;
  return explain_args(check_args(call.tensors, elem, a.rows, a.cols), Call::names, call.tensors,
                      elem, a.rows, a.cols);
}

/// The workspace overloads' explanation: the launchers' checks in their order (check_args, then
/// for a call with a workspace to run on, the plan and the workspace it needs) as a sentence;
/// nullptr where the launcher would accept the arguments. Planning instantiates the kernels
/// (their occupancy is queried), so the overloads without a workspace do not come here.
template <class Call>
const char* explain_call(Call const& call, void const* workspace,
                         std::size_t const* workspace_bytes) noexcept {
  if (workspace_bytes == nullptr) return null_workspace_bytes();
  if (const char* why = explain_tensors(call)) return why;
  // A size query, or no rows: nothing else is checked before the launch.
  if (workspace == nullptr || call.args.rows == 0) return nullptr;
  plan p;
  const cudaError_t e = checked_plan(call, true, &p);
  char* b = explain_buffer();
  constexpr std::size_t n = explain_buffer_size;
  if (e != cudaSuccess) {
    std::snprintf(b, n, "no plan for these arguments on the current device: %s",
                  cudaGetErrorString(e));
    return b;
  }
  if (workspace_holds(p, workspace, *workspace_bytes)) return nullptr;
  if (reinterpret_cast<std::uintptr_t>(workspace) % 8 != 0)
    std::snprintf(b, n, "workspace (%p) is not 8-byte aligned", workspace);
  else
    std::snprintf(b, n, "*workspace_bytes (%zu) is smaller than the %lld bytes this call needs",
                  *workspace_bytes, static_cast<long long>(p.workspace_bytes));
  return b;
}

}  // namespace detail

/// @brief Why `softmax_forward` would refuse these arguments with cudaErrorInvalidValue: a
/// sentence naming the argument and the rule it breaks (e.g. "y_row_stride (7) is smaller than
/// cols (8)"), or nullptr where the launcher accepts them.
///
/// Takes the launcher's arguments (`stream` is not used) and applies the launcher's own checks,
/// so the two never disagree. Never touches the device or the memory pointed to, except the
/// workspace overloads given a workspace to run with (not a size query), which plan the call as
/// the launcher does (a device query, cached) to check the workspace's size. The sentence lives in
/// a thread-local buffer, valid until this thread's next explanation.
///
/// @code
/// if (const cudaError_t e = rowsoftmax::softmax_forward(x, xs, y, ys, rows, cols, s)) {
///   const char* why = rowsoftmax::explain_forward(x, xs, y, ys, rows, cols);
///   std::fprintf(stderr, "softmax_forward: %s\n", why ? why : cudaGetErrorString(e));
/// }
/// @endcode
template <class T>
const char* explain_forward(T const* x, std::int64_t x_row_stride, T const* y,
                            std::int64_t y_row_stride, std::int64_t rows, std::int64_t cols,
                            cudaStream_t /*stream*/ = nullptr) noexcept {
  return detail::explain_tensors(
      detail::forward_call<T>(x, x_row_stride, y, y_row_stride, rows, cols));
}

/// @brief explain_forward for the contiguous overload (row stride == cols).
template <class T>
const char* explain_forward(T const* x, T const* y, std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  return explain_forward(x, cols, y, cols, rows, cols, stream);
}

/// @brief explain_forward for the workspace overload: also a null `workspace_bytes`, and, given
/// a workspace to run with, one smaller than the call needs or not 8-byte aligned.
template <class T>
const char* explain_forward(void const* workspace, std::size_t const* workspace_bytes, T const* x,
                            std::int64_t x_row_stride, T const* y, std::int64_t y_row_stride,
                            std::int64_t rows, std::int64_t cols,
                            cudaStream_t /*stream*/ = nullptr) noexcept {
  return detail::explain_call(detail::forward_call<T>(x, x_row_stride, y, y_row_stride, rows, cols),
                              workspace, workspace_bytes);
}

/// @brief explain_forward for the workspace overload of contiguous rows.
template <class T>
const char* explain_forward(void const* workspace, std::size_t const* workspace_bytes, T const* x,
                            T const* y, std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream = nullptr) noexcept {
  return explain_forward(workspace, workspace_bytes, x, cols, y, cols, rows, cols, stream);
}

/// @brief Why `softmax_backward` would refuse these arguments (nullptr: it accepts them).
/// See explain_forward.
template <class T>
const char* explain_backward(T const* dy, std::int64_t dy_row_stride, T const* y,
                             std::int64_t y_row_stride, T const* dx, std::int64_t dx_row_stride,
                             std::int64_t rows, std::int64_t cols,
                             cudaStream_t /*stream*/ = nullptr) noexcept {
  return detail::explain_tensors(
      detail::backward_call<T>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols));
}

/// @brief explain_backward for the contiguous overload (row stride == cols).
template <class T>
const char* explain_backward(T const* dy, T const* y, T const* dx, std::int64_t rows,
                             std::int64_t cols, cudaStream_t stream = nullptr) noexcept {
  return explain_backward(dy, cols, y, cols, dx, cols, rows, cols, stream);
}

/// @brief explain_backward for the workspace overload. See explain_forward's.
template <class T>
const char* explain_backward(void const* workspace, std::size_t const* workspace_bytes, T const* dy,
                             std::int64_t dy_row_stride, T const* y, std::int64_t y_row_stride,
                             T const* dx, std::int64_t dx_row_stride, std::int64_t rows,
                             std::int64_t cols, cudaStream_t /*stream*/ = nullptr) noexcept {
  return detail::explain_call(
      detail::backward_call<T>(dy, dy_row_stride, y, y_row_stride, dx, dx_row_stride, rows, cols),
      workspace, workspace_bytes);
}

/// @brief explain_backward for the workspace overload of contiguous rows.
template <class T>
const char* explain_backward(void const* workspace, std::size_t const* workspace_bytes, T const* dy,
                             T const* y, T const* dx, std::int64_t rows, std::int64_t cols,
                             cudaStream_t stream = nullptr) noexcept {
  return explain_backward(workspace, workspace_bytes, dy, cols, y, cols, dx, cols, rows, cols,
                          stream);
}

}  // namespace rowsoftmax
