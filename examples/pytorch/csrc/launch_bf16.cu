// SPDX-License-Identifier: Apache-2.0
#include <rowsoftmax/rowsoftmax.cuh>

#include "launch.cuh"

namespace rowsoftmax_ext {

template <>
cudaError_t forward<__nv_bfloat16>(__nv_bfloat16 const* x, std::int64_t x_stride, __nv_bfloat16* y,
                                   std::int64_t y_stride, std::int64_t rows, std::int64_t cols,
                                   cudaStream_t stream) {
  return rowsoftmax::softmax_forward(x, x_stride, y, y_stride, rows, cols, stream);
}

template <>
cudaError_t backward<__nv_bfloat16>(__nv_bfloat16 const* dy, std::int64_t dy_stride,
                                    __nv_bfloat16 const* y, std::int64_t y_stride,
                                    __nv_bfloat16* dx, std::int64_t dx_stride, std::int64_t rows,
                                    std::int64_t cols, cudaStream_t stream) {
  return rowsoftmax::softmax_backward(dy, dy_stride, y, y_stride, dx, dx_stride, rows, cols,
                                      stream);
}

}  // namespace rowsoftmax_ext
