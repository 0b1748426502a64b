// SPDX-License-Identifier: Apache-2.0
#include <rowsoftmax/rowsoftmax.cuh>

#include "launch.cuh"

namespace rowsoftmax_ext {

template <>
cudaError_t forward<__half>(__half const* x, std::int64_t x_stride, __half* y,
                            std::int64_t y_stride, std::int64_t rows, std::int64_t cols,
                            cudaStream_t stream) {
  return rowsoftmax::softmax_forward(x, x_stride, y, y_stride, rows, cols, stream);
}

template <>
cudaError_t backward<__half>(__half const* dy, std::int64_t dy_stride, __half const* y,
                             std::int64_t y_stride, __half* dx, std::int64_t dx_stride,
                             std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  return rowsoftmax::softmax_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols,
                                      stream);
}

}  // namespace rowsoftmax_ext
