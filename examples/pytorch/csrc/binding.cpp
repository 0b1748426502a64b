// SPDX-License-Identifier: Apache-2.0
// PyTorch bindings: softmax over the last dimension of a CUDA tensor, forward and backward.
// Rows are passed with their real stride (a slice x[..., :k] is not copied); only layouts whose
// rows cannot be described by one stride are made contiguous first.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <torch/extension.h>

#include <cstdint>

#include "launch.cuh"

namespace {

struct rows_view {
  torch::Tensor t;  // the tensor the rows live in (the input, or a contiguous copy)
  std::int64_t rows, cols, stride;
};

// The rows of `t` along its last dimension as (tensor, rows, cols, row stride): `t` itself when
// its elements are unit-strided along the row and its leading dimensions collapse into one
// row index with a single stride >= cols (contiguous tensors, x[..., :k] slices, ...), else a
// contiguous copy (transposes, broadcast gradients with stride 0, ...).
rows_view as_rows(torch::Tensor const& t) {
  const std::int64_t cols = t.size(-1);
  const std::int64_t rows = cols == 0 ? 0 : t.numel() / cols;
  bool ok = t.stride(-1) == 1 || cols == 1;
  std::int64_t stride = cols;  // any stride >= cols works for a single row
  std::int64_t inner_size = 0, inner_stride = 0;
  for (int d = t.dim() - 2; d >= 0 && ok; --d) {
    if (t.size(d) == 1) continue;
    if (inner_size == 0) {
      stride = t.stride(d);  // the row stride: the innermost leading dimension of size > 1
    } else if (t.stride(d) != inner_stride * inner_size) {
      ok = false;
    }
    inner_size = t.size(d);
    inner_stride = t.stride(d);
  }
  if (ok && stride >= cols) return {t, rows, cols, stride};
  return {t.contiguous(), rows, cols, cols};
}

void check_input(torch::Tensor const& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), "rowsoftmax: ", name, " must be a CUDA tensor");
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kHalf ||
                  t.scalar_type() == torch::kBFloat16,
              "rowsoftmax: ", name, " must be float32, float16 or bfloat16, got ", t.scalar_type());
  TORCH_CHECK(t.dim() >= 1, "rowsoftmax: ", name, " must have at least one dimension");
}

template <class T>
T* ptr(torch::Tensor const& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

// Raises for a launcher's error: ValueError naming the argument and the rule where the launcher
// refused the arguments (`why`, rowsoftmax::explain_*), RuntimeError for other CUDA errors.
void check_cuda(cudaError_t e, const char* why) {
  TORCH_CHECK_VALUE(why == nullptr, "rowsoftmax: ", cudaGetErrorString(e), ": ", why);
  TORCH_CHECK(e == cudaSuccess, "rowsoftmax: ", cudaGetErrorString(e));
}

torch::Tensor forward(torch::Tensor x) {
  check_input(x, "x");
  const c10::cuda::CUDAGuard guard(x.device());
  const rows_view in = as_rows(x);
  auto y = torch::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  if (in.rows == 0) return y;
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  cudaError_t e = cudaSuccess;
  switch (x.scalar_type()) {
    case torch::kFloat:
      e = rowsoftmax_ext::forward(ptr<float>(in.t), in.stride, ptr<float>(y), in.cols, in.rows,
                                  in.cols, stream, &why);
      break;
    case torch::kHalf:
      e = rowsoftmax_ext::forward(ptr<__half>(in.t), in.stride, ptr<__half>(y), in.cols, in.rows,
                                  in.cols, stream, &why);
      break;
    default:
      e = rowsoftmax_ext::forward(ptr<__nv_bfloat16>(in.t), in.stride, ptr<__nv_bfloat16>(y),
                                  in.cols, in.rows, in.cols, stream, &why);
  }
  check_cuda(e, why);
  return y;
}

torch::Tensor backward(torch::Tensor dy, torch::Tensor y) {
  check_input(dy, "dy");
  check_input(y, "y");
  TORCH_CHECK(dy.sizes() == y.sizes(), "rowsoftmax: dy and y must have the same shape");
  TORCH_CHECK(dy.scalar_type() == y.scalar_type(), "rowsoftmax: dy and y must have the same dtype");
  TORCH_CHECK(dy.device() == y.device(), "rowsoftmax: dy and y must be on the same device");
  const c10::cuda::CUDAGuard guard(y.device());
  rows_view g = as_rows(dy), o = as_rows(y);
  auto dx = torch::empty(y.sizes(), y.options().memory_format(at::MemoryFormat::Contiguous));
  if (o.rows == 0) return dx;
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  cudaError_t e = cudaSuccess;
  switch (y.scalar_type()) {
    case torch::kFloat:
      e = rowsoftmax_ext::backward(ptr<float>(g.t), g.stride, ptr<float>(o.t), o.stride,
                                   ptr<float>(dx), o.cols, o.rows, o.cols, stream, &why);
      break;
    case torch::kHalf:
      e = rowsoftmax_ext::backward(ptr<__half>(g.t), g.stride, ptr<__half>(o.t), o.stride,
                                   ptr<__half>(dx), o.cols, o.rows, o.cols, stream, &why);
      break;
    default:
      e = rowsoftmax_ext::backward(ptr<__nv_bfloat16>(g.t), g.stride, ptr<__nv_bfloat16>(o.t),
                                   o.stride, ptr<__nv_bfloat16>(dx), o.cols, o.rows, o.cols, stream,
                                   &why);
  }
  check_cuda(e, why);
  return dx;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "softmax over the last dimension (CUDA)");
  m.def("backward", &backward, "softmax backward over the last dimension: y * (dy - sum(dy * y))");
}
