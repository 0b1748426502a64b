// SPDX-License-Identifier: Apache-2.0
// The definitions behind launch.cuh, written once; each launch_<type>.cu instantiates the plain
// ones for its element type, each launch_fused_<type>.cu the fused ones, each
// launch_masked_<type>.cu the masked ones, each launch_bool_masked_<type>.cu the boolean-masked
// ones, each launch_biased_<type>.cu the biased forward and each launch_out_<type>_<type>.cu the
// fused ones of another output type (one translation unit per type and family, so they compile
// in parallel).
#pragma once

#include <rowsoftmax/rowsoftmax.cuh>

#include "launch.cuh"

namespace rowsoftmax_ext {

template <class T>
cudaError_t forward(T const* x, std::int64_t x_stride, T* y, std::int64_t y_stride,
                    std::int64_t rows, std::int64_t cols, cudaStream_t stream, const char** why) {
  const cudaError_t e = rowsoftmax::softmax_forward(x, x_stride, y, y_stride, rows, cols, stream);
  *why = e == cudaErrorInvalidValue
             ? rowsoftmax::explain_forward(x, x_stride, y, y_stride, rows, cols)
             : nullptr;
  return e;
}

template <class T>
cudaError_t backward(T const* dy, std::int64_t dy_stride, T const* y, std::int64_t y_stride, T* dx,
                     std::int64_t dx_stride, std::int64_t rows, std::int64_t cols,
                     cudaStream_t stream, const char** why) {
  const cudaError_t e =
      rowsoftmax::softmax_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols, stream);
  *why = e == cudaErrorInvalidValue
             ? rowsoftmax::explain_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols)
             : nullptr;
  return e;
}

template <class T, class Options, class Out>
cudaError_t options_forward(bool log, T const* x, std::int64_t x_stride, Out* y,
                            std::int64_t y_stride, std::int64_t rows, std::int64_t cols,
                            Options const& options, cudaStream_t stream, const char** why) {
  const cudaError_t e =
      log ? rowsoftmax::log_softmax_forward(x, x_stride, y, y_stride, rows, cols, options, stream)
          : rowsoftmax::softmax_forward(x, x_stride, y, y_stride, rows, cols, options, stream);
  *why = e == cudaErrorInvalidValue
             ? rowsoftmax::explain_forward(x, x_stride, y, y_stride, rows, cols, options)
             : nullptr;
  return e;
}

template <class T, class Options, class Out>
cudaError_t options_backward(bool log, Out const* dy, std::int64_t dy_stride, Out const* y,
                             std::int64_t y_stride, T* dx, std::int64_t dx_stride,
                             std::int64_t rows, std::int64_t cols, Options const& options,
                             cudaStream_t stream, const char** why) {
  const cudaError_t e =
      log ? rowsoftmax::log_softmax_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols,
                                             options, stream)
          : rowsoftmax::softmax_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols,
                                         options, stream);
  *why = e == cudaErrorInvalidValue ? rowsoftmax::explain_backward(dy, dy_stride, y, y_stride, dx,
                                                                   dx_stride, rows, cols, options)
                                    : nullptr;
  return e;
}

}  // namespace rowsoftmax_ext

/// Explicit instantiations of forward and backward for element type T.
#define ROWSOFTMAX_EXT_INSTANTIATE(T)                                                              \
  template cudaError_t rowsoftmax_ext::forward<T>(T const*, std::int64_t, T*, std::int64_t,        \
                                                  std::int64_t, std::int64_t, cudaStream_t,        \
                                                  const char**);                                   \
  template cudaError_t rowsoftmax_ext::backward<T>(T const*, std::int64_t, T const*, std::int64_t, \
                                                   T*, std::int64_t, std::int64_t, std::int64_t,   \
                                                   cudaStream_t, const char**)

/// Explicit instantiation of options_forward for element type T and options type Options.
#define ROWSOFTMAX_EXT_INSTANTIATE_FORWARD(T, Options)                                            \
  template cudaError_t rowsoftmax_ext::options_forward<T, Options>(                               \
      bool, T const*, std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t, Options const&, \
      cudaStream_t, const char**)

/// Explicit instantiations of options_forward and options_backward for element type T and
/// options type Options.
#define ROWSOFTMAX_EXT_INSTANTIATE_OPTIONS(T, Options)                                      \
  ROWSOFTMAX_EXT_INSTANTIATE_FORWARD(T, Options);                                           \
  template cudaError_t rowsoftmax_ext::options_backward<T, Options>(                        \
      bool, T const*, std::int64_t, T const*, std::int64_t, T*, std::int64_t, std::int64_t, \
      std::int64_t, Options const&, cudaStream_t, const char**)

/// Explicit instantiations of options_forward and options_backward with softmax_options for
/// input type T and another output type Out.
#define ROWSOFTMAX_EXT_INSTANTIATE_OUT(T, Out)                                                  \
  template cudaError_t rowsoftmax_ext::options_forward<T, rowsoftmax::softmax_options, Out>(    \
      bool, T const*, std::int64_t, Out*, std::int64_t, std::int64_t, std::int64_t,             \
      rowsoftmax::softmax_options const&, cudaStream_t, const char**);                          \
  template cudaError_t rowsoftmax_ext::options_backward<T, rowsoftmax::softmax_options, Out>(   \
      bool, Out const*, std::int64_t, Out const*, std::int64_t, T*, std::int64_t, std::int64_t, \
      std::int64_t, rowsoftmax::softmax_options const&, cudaStream_t, const char**)
