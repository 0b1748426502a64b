// SPDX-License-Identifier: Apache-2.0
// The extension's kernel entry points, one translation unit per element type for the plain
// launchers (launch_<type>.cu), one per type for the fused ones (launch_fused_<type>.cu), one per
// type for the masked ones (launch_masked_<type>.cu), one per type for the boolean-masked ones
// (launch_bool_masked_<type>.cu), one per type for the biased forward (launch_biased_<type>.cu)
// and one per pair of input and output types for the fused ones of another output type
// (launch_out_<type>_<type>.cu), so that they compile in parallel and without the PyTorch
// headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <rowsoftmax/options.hpp>

namespace rowsoftmax_ext {

/// rowsoftmax::softmax_forward; where it refuses the arguments (cudaErrorInvalidValue), `*why`
/// is rowsoftmax::explain_forward's sentence for them (else nullptr).
template <class T>
cudaError_t forward(T const* x, std::int64_t x_stride, T* y, std::int64_t y_stride,
                    std::int64_t rows, std::int64_t cols, cudaStream_t stream, const char** why);

/// rowsoftmax::softmax_backward, with explain_backward's sentence in `*why` as forward's.
template <class T>
cudaError_t backward(T const* dy, std::int64_t dy_stride, T const* y, std::int64_t y_stride, T* dx,
                     std::int64_t dx_stride, std::int64_t rows, std::int64_t cols,
                     cudaStream_t stream, const char** why);

/// rowsoftmax::softmax_forward with options (`log`: log_softmax_forward), with the fused
/// explain_forward's sentence in `*why` as forward's. `Options`: softmax_options,
/// masked_softmax_options, bool_masked_softmax_options or biased_softmax_options (one unit a type
/// and options type); y of `Out`, T's or another (float from a 16-bit T, a 16-bit type from float:
/// the extension's units of another output type, softmax_options only).
template <class T, class Options, class Out = T>
cudaError_t options_forward(bool log, T const* x, std::int64_t x_stride, Out* y,
                            std::int64_t y_stride, std::int64_t rows, std::int64_t cols,
                            Options const& options, cudaStream_t stream, const char** why);

/// rowsoftmax::softmax_backward with options (`log`: log_softmax_backward), with the fused
/// explain_backward's sentence in `*why` as forward's (biased_softmax_options has none here: its
/// backward is the boolean-masked one's, which the extension calls); dy and y of the forward's
/// output type Out, dx of T.
template <class T, class Options, class Out = T>
cudaError_t options_backward(bool log, Out const* dy, std::int64_t dy_stride, Out const* y,
                             std::int64_t y_stride, T* dx, std::int64_t dx_stride,
                             std::int64_t rows, std::int64_t cols, Options const& options,
                             cudaStream_t stream, const char** why);

}  // namespace rowsoftmax_ext
