// SPDX-License-Identifier: Apache-2.0
// The extension's kernel entry points, one translation unit per element type (launch_*.cu) so
// that they compile in parallel and without the PyTorch headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

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

}  // namespace rowsoftmax_ext
