// SPDX-License-Identifier: Apache-2.0
// PyTorch bindings: softmax over the last dimension of a CUDA tensor, forward and backward, plain
// (forward, backward) and fused (fused_forward, fused_backward: softmax or log-softmax with a
// scale, a per-row scale, a row log-sum-exp output, an empty-row policy, the masks that keep a
// prefix of each row, lengths and causal, a boolean mask and an additive bias, and an output
// dtype other than the input's).
// Rows are passed with their real stride (a slice x[..., :k] is not copied); only layouts whose
// rows cannot be described by one stride are made contiguous first.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>

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

// Calls f(tag<T>{}) with T the CUDA element type of `t` (float, __half or __nv_bfloat16).
template <class T>
struct tag {
  using type = T;
};

template <class F>
cudaError_t by_dtype(torch::ScalarType t, F&& f) {
  switch (t) {
    case torch::kFloat:
      return f(tag<float>{});
    case torch::kHalf:
      return f(tag<__half>{});
    default:
      return f(tag<__nv_bfloat16>{});
  }
}

// Calls f(tag<T>{}, tag<Out>{}) for input dtype `in` and another output dtype `out` (checked by
// out_dtype: float32 from a 16-bit input, or a 16-bit one from float32).
template <class F>
cudaError_t by_pair(torch::ScalarType in, torch::ScalarType out, F&& f) {
  if (in == torch::kBFloat16) return f(tag<__nv_bfloat16>{}, tag<float>{});
  if (in == torch::kHalf) return f(tag<__half>{}, tag<float>{});
  if (out == torch::kBFloat16) return f(tag<float>{}, tag<__nv_bfloat16>{});
  return f(tag<float>{}, tag<__half>{});
}

// The dtype of a fused forward's y (a backward's dy and y) for x's dtype `in` and the requested
// `dtype`: `in` where none is, else `dtype`, which must be `in`, float32 for a 16-bit x or
// float16/bfloat16 for a float32 x.
torch::ScalarType out_dtype(torch::ScalarType in, std::optional<torch::ScalarType> dtype) {
  if (!dtype.has_value() || *dtype == in) return in;
  const bool ok = in == torch::kFloat ? (*dtype == torch::kHalf || *dtype == torch::kBFloat16)
                                      : *dtype == torch::kFloat;
  TORCH_CHECK_TYPE(ok, "rowsoftmax: dtype must be x's (", in, "), float32 for float16 or bfloat16 ",
                   "x, or float16 or bfloat16 for float32 x; got ", *dtype);
  return *dtype;
}

// dy and y of a backward call: CUDA tensors of one shape, dtype and device.
void check_gradient_pair(torch::Tensor const& dy, torch::Tensor const& y) {
  check_input(dy, "dy");
  check_input(y, "y");
  TORCH_CHECK(dy.sizes() == y.sizes(), "rowsoftmax: dy and y must have the same shape");
  TORCH_CHECK(dy.scalar_type() == y.scalar_type(), "rowsoftmax: dy and y must have the same dtype");
  TORCH_CHECK(dy.device() == y.device(), "rowsoftmax: dy and y must be on the same device");
}

torch::Tensor forward(torch::Tensor x) {
  check_input(x, "x");
  const c10::cuda::CUDAGuard guard(x.device());
  const rows_view in = as_rows(x);
  auto y = torch::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  if (in.rows == 0) return y;
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  const cudaError_t e = by_dtype(x.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    return rowsoftmax_ext::forward(ptr<T>(in.t), in.stride, ptr<T>(y), in.cols, in.rows, in.cols,
                                   stream, &why);
  });
  check_cuda(e, why);
  return y;
}

torch::Tensor backward(torch::Tensor dy, torch::Tensor y) {
  check_gradient_pair(dy, y);
  const c10::cuda::CUDAGuard guard(y.device());
  rows_view g = as_rows(dy), o = as_rows(y);
  auto dx = torch::empty(y.sizes(), y.options().memory_format(at::MemoryFormat::Contiguous));
  if (o.rows == 0) return dx;
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  const cudaError_t e = by_dtype(y.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    return rowsoftmax_ext::backward(ptr<T>(g.t), g.stride, ptr<T>(o.t), o.stride, ptr<T>(dx),
                                    o.cols, o.rows, o.cols, stream, &why);
  });
  check_cuda(e, why);
  return dx;
}

// The fused options for rows of `like` (`like`'s shape without its last dimension): the scale
// (finite as a float), and `row_scale` checked (float32, that shape, `like`'s device) and made
// contiguous into `*keep`, which must outlive the launch.
rowsoftmax::softmax_options fused_options(torch::Tensor const& like, double scale,
                                          std::optional<torch::Tensor> const& row_scale,
                                          torch::Tensor* keep) {
  TORCH_CHECK_VALUE(std::abs(scale) <= std::numeric_limits<float>::max(),
                    "rowsoftmax: scale must be finite in float32, got ", scale);
  rowsoftmax::softmax_options o;
  o.scale = static_cast<float>(scale);
  if (row_scale.has_value()) {
    const torch::Tensor& r = *row_scale;
    TORCH_CHECK_TYPE(r.scalar_type() == torch::kFloat,
                     "rowsoftmax: row_scale must be float32, got ", r.scalar_type());
    TORCH_CHECK_VALUE(r.device() == like.device(), "rowsoftmax: row_scale must be on ",
                      like.device(), ", got ", r.device());
    TORCH_CHECK_VALUE(r.sizes() == like.sizes().slice(0, like.dim() - 1),
                      "rowsoftmax: row_scale must have the shape of x without its last dimension ",
                      like.sizes().slice(0, like.dim() - 1), ", got ", r.sizes());
    *keep = r.contiguous();  // row i of as_rows is element i in row-major order
    o.row_scale = keep->data_ptr<float>();
  }
  return o;
}

// The strides of `t` (an operand of x's rows, broadcast to x's shape or to x.shape[:-1]) along
// the dimensions that read x's row r as (batch, head, query), x having `d` dimensions: batch the
// dimensions before d - 3 collapsed into one (false where they do not collapse into one stride),
// head dimension d - 3, query dimension d - 2 (0 where x has no such dimension or t broadcasts).
bool row_strides(torch::Tensor const& t, std::int64_t d, rowsoftmax::broadcast_strides* out) {
  auto stride_of = [&](std::int64_t dim) -> std::int64_t {
    return dim < 0 || t.size(dim) == 1 ? 0 : t.stride(dim);
  };
  std::int64_t batch = 0, inner_size = 0, inner_stride = 0;
  for (std::int64_t i = d - 4; i >= 0; --i) {
    if (t.size(i) == 1) continue;
    if (inner_size == 0) {
      batch = t.stride(i);
    } else if (t.stride(i) != inner_stride * inner_size) {
      return false;
    }
    inner_size = t.size(i);
    inner_stride = t.stride(i);
  }
  *out = {batch, stride_of(d - 3), stride_of(d - 2)};
  return true;
}

// `t` (an operand of x's rows, x having `d` dimensions, any strides) as the kernels read it: row
// by row through one stride a batch, head and query (row_strides, into `*st`), and where
// `columns` (an operand of x's shape) with its last dimension contiguous; `t` itself where it
// reads so, else a contiguous copy.
torch::Tensor read_rows(torch::Tensor const& t, std::int64_t d, bool columns,
                        rowsoftmax::broadcast_strides* st) {
  if ((!columns || t.stride(d - 1) == 1 || t.size(d - 1) <= 1) && row_strides(t, d, st)) return t;
  torch::Tensor c = t.contiguous();
  row_strides(c, d, st);
  return c;
}

// The masked options for rows of `like`, whose shape is (..., heads, queries, cols): the fused
// options `o`, `lengths` (int32, of like's shape without its last dimension, any strides: the
// Python layer broadcasts it) read through one stride a batch, head and query (made contiguous
// into `*keep` where its leading dimensions do not collapse into one stride), and causal.
rowsoftmax::masked_softmax_options masked_options(torch::Tensor const& like,
                                                  rowsoftmax::softmax_options const& o,
                                                  std::optional<torch::Tensor> const& lengths,
                                                  bool causal, std::int64_t diagonal,
                                                  torch::Tensor* keep) {
  rowsoftmax::masked_softmax_options m;
  static_cast<rowsoftmax::softmax_options&>(m) = o;
  const std::int64_t d = like.dim();
  m.queries = d >= 2 ? std::max<std::int64_t>(like.size(d - 2), 1) : 1;
  m.heads = d >= 3 ? std::max<std::int64_t>(like.size(d - 3), 1) : 1;
  m.causal = causal;
  m.diagonal = diagonal;
  if (!lengths.has_value()) return m;
  torch::Tensor const& l = *lengths;
  TORCH_CHECK_TYPE(l.scalar_type() == torch::kInt, "rowsoftmax: lengths must be int32, got ",
                   l.scalar_type());
  TORCH_CHECK_VALUE(l.device() == like.device(), "rowsoftmax: lengths must be on ", like.device(),
                    ", got ", l.device());
  TORCH_CHECK_VALUE(l.sizes() == like.sizes().slice(0, d - 1),
                    "rowsoftmax: lengths must have the shape of x without its last dimension ",
                    like.sizes().slice(0, d - 1), ", got ", l.sizes());
  *keep = read_rows(l, d, false, &m.lengths_strides);
  m.lengths = keep->data_ptr<int>();
  return m;
}

// The boolean-masked options: the masked options `m` and `mask` (bool, of like's shape, any
// strides: the Python layer broadcasts it), read through one stride a batch, head and query with
// its columns contiguous (made contiguous into `*keep` where they are not, or where its leading
// dimensions do not collapse into one stride).
rowsoftmax::bool_masked_softmax_options bool_masked_options(
    torch::Tensor const& like, rowsoftmax::masked_softmax_options const& m,
    torch::Tensor const& mask, torch::Tensor* keep) {
  TORCH_CHECK_TYPE(mask.scalar_type() == torch::kBool, "rowsoftmax: mask must be bool, got ",
                   mask.scalar_type());
  TORCH_CHECK_VALUE(mask.device() == like.device(), "rowsoftmax: mask must be on ", like.device(),
                    ", got ", mask.device());
  TORCH_CHECK_VALUE(mask.sizes() == like.sizes(), "rowsoftmax: mask must have the shape of x ",
                    like.sizes(), ", got ", mask.sizes());
  rowsoftmax::bool_masked_softmax_options b;
  static_cast<rowsoftmax::masked_softmax_options&>(b) = m;
  *keep = read_rows(mask, like.dim(), true, &b.keep_strides);
  b.keep = keep->data_ptr<bool>();
  return b;
}

// The biased options: the boolean-masked options `b` and `bias` (float32 or like's dtype, of
// like's shape, any strides: the Python layer broadcasts it), read through one stride a batch,
// head and query with its columns contiguous (made contiguous into `*keep` where they are not,
// or where its leading dimensions do not collapse into one stride).
rowsoftmax::biased_softmax_options biased_options(torch::Tensor const& like,
                                                  rowsoftmax::bool_masked_softmax_options const& b,
                                                  torch::Tensor const& bias, torch::Tensor* keep) {
  TORCH_CHECK_TYPE(bias.scalar_type() == torch::kFloat || bias.scalar_type() == like.scalar_type(),
                   "rowsoftmax: bias must be float32 or x's dtype (", like.scalar_type(), "), got ",
                   bias.scalar_type());
  TORCH_CHECK_VALUE(bias.device() == like.device(), "rowsoftmax: bias must be on ", like.device(),
                    ", got ", bias.device());
  TORCH_CHECK_VALUE(bias.sizes() == like.sizes(), "rowsoftmax: bias must have the shape of x ",
                    like.sizes(), ", got ", bias.sizes());
  rowsoftmax::biased_softmax_options o;
  static_cast<rowsoftmax::bool_masked_softmax_options&>(o) = b;
  *keep = read_rows(bias, like.dim(), true, &o.bias_strides);
  o.bias = keep->data_ptr();
  o.bias_dtype = bias.scalar_type() == torch::kFloat ? rowsoftmax::bias_type::f32
                                                     : rowsoftmax::bias_type::input;
  return o;
}

// Fused forward: y = softmax(s * x) or (`log`) log_softmax(s * x) over the last dimension, with
// s = scale * row_scale[row]; empty rows (all -inf after scaling) NaN or, with `zero_empty`,
// softmax 0 / log-softmax -inf. Returns (y, lse): lse the float32 log-sum-exp of each row's
// logits, of x's shape without its last dimension, where `return_lse`, else an empty tensor.
// With `lengths` or `causal`, the masked launchers (masked_options); with `mask` (true takes
// part), the boolean-masked ones (bool_masked_options); with `bias` (z = s * x + bias), the biased
// ones (biased_options). y of `dtype` where given (out_dtype; not with the masks or the bias: the
// extension compiles those for one type).
std::tuple<torch::Tensor, torch::Tensor> fused_forward(
    torch::Tensor x, double scale, std::optional<torch::Tensor> row_scale, bool log,
    bool zero_empty, bool return_lse, std::optional<torch::Tensor> lengths, bool causal,
    std::int64_t diagonal, std::optional<torch::Tensor> mask, std::optional<torch::Tensor> bias,
    std::optional<torch::ScalarType> dtype) {
  check_input(x, "x");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor rs;
  rowsoftmax::softmax_options o = fused_options(x, scale, row_scale, &rs);
  o.empty = zero_empty ? rowsoftmax::empty_rows::zero : rowsoftmax::empty_rows::nan;
  const torch::ScalarType out = out_dtype(x.scalar_type(), dtype);
  const bool masked = lengths.has_value() || causal || mask.has_value() || bias.has_value();
  TORCH_CHECK_VALUE(out == x.scalar_type() || !masked,
                    "rowsoftmax: dtype other than x's is not supported with lengths, causal, "
                    "mask or bias");
  auto y =
      torch::empty(x.sizes(), x.options().dtype(out).memory_format(at::MemoryFormat::Contiguous));
  auto lse = return_lse
                 ? torch::empty(x.sizes().slice(0, x.dim() - 1), x.options().dtype(torch::kFloat))
                 : torch::empty({0}, x.options().dtype(torch::kFloat));
  // Rows of no columns: logsumexp of nothing is -inf, as torch.logsumexp gives.
  if (return_lse && x.size(-1) == 0) lse.fill_(-std::numeric_limits<float>::infinity());
  const rows_view in = as_rows(x);
  if (in.rows == 0) return {y, lse};
  if (return_lse) o.row_lse = lse.data_ptr<float>();
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  if (out != x.scalar_type()) {
    check_cuda(by_pair(x.scalar_type(), out,
                       [&](auto t, auto u) {
                         using T = typename decltype(t)::type;
                         using Out = typename decltype(u)::type;
                         return rowsoftmax_ext::options_forward(log, ptr<T>(in.t), in.stride,
                                                                ptr<Out>(y), in.cols, in.rows,
                                                                in.cols, o, stream, &why);
                       }),
               why);
    return {y, lse};
  }
  torch::Tensor keep_lengths, keep_mask, keep_bias;
  const rowsoftmax::masked_softmax_options m =
      masked ? masked_options(x, o, lengths, causal, diagonal, &keep_lengths)
             : rowsoftmax::masked_softmax_options{};
  rowsoftmax::bool_masked_softmax_options b;
  static_cast<rowsoftmax::masked_softmax_options&>(b) = m;
  if (mask.has_value()) b = bool_masked_options(x, m, *mask, &keep_mask);
  const rowsoftmax::biased_softmax_options bo = bias.has_value()
                                                    ? biased_options(x, b, *bias, &keep_bias)
                                                    : rowsoftmax::biased_softmax_options{};
  const cudaError_t e = by_dtype(x.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if (bias.has_value()) {
      return rowsoftmax_ext::options_forward(log, ptr<T>(in.t), in.stride, ptr<T>(y), in.cols,
                                             in.rows, in.cols, bo, stream, &why);
    }
    if (mask.has_value()) {
      return rowsoftmax_ext::options_forward(log, ptr<T>(in.t), in.stride, ptr<T>(y), in.cols,
                                             in.rows, in.cols, b, stream, &why);
    }
    return masked ? rowsoftmax_ext::options_forward(log, ptr<T>(in.t), in.stride, ptr<T>(y),
                                                    in.cols, in.rows, in.cols, m, stream, &why)
                  : rowsoftmax_ext::options_forward(log, ptr<T>(in.t), in.stride, ptr<T>(y),
                                                    in.cols, in.rows, in.cols, o, stream, &why);
  });
  check_cuda(e, why);
  return {y, lse};
}

// Fused backward with the forward's scale and row_scale, y the forward's output: the gradient
// with respect to x, s * y * (dy - sum(dy * y)) or (`log`) s * (dy - exp(y) * sum(dy)); dx of
// `dx_dtype` where given (x's, where the forward wrote y of another dtype).
torch::Tensor fused_backward(torch::Tensor dy, torch::Tensor y, double scale,
                             std::optional<torch::Tensor> row_scale, bool log,
                             std::optional<torch::Tensor> lengths, bool causal,
                             std::int64_t diagonal, std::optional<torch::Tensor> mask,
                             std::optional<torch::ScalarType> dx_dtype) {
  check_gradient_pair(dy, y);
  const c10::cuda::CUDAGuard guard(y.device());
  torch::Tensor rs;
  const rowsoftmax::softmax_options o = fused_options(y, scale, row_scale, &rs);
  rows_view g = as_rows(dy), out = as_rows(y);
  const torch::ScalarType in = dx_dtype.value_or(y.scalar_type());
  if (in != y.scalar_type()) out_dtype(in, y.scalar_type());  // a pair the forward writes
  const bool masked = lengths.has_value() || causal || mask.has_value();
  TORCH_CHECK_VALUE(in == y.scalar_type() || !masked,
                    "rowsoftmax: dx_dtype other than y's is not supported with lengths, causal or "
                    "mask");
  auto dx =
      torch::empty(y.sizes(), y.options().dtype(in).memory_format(at::MemoryFormat::Contiguous));
  if (out.rows == 0) return dx;
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  const char* why = nullptr;
  if (in != y.scalar_type()) {
    check_cuda(by_pair(in, y.scalar_type(),
                       [&](auto t, auto u) {
                         using T = typename decltype(t)::type;
                         using Out = typename decltype(u)::type;
                         return rowsoftmax_ext::options_backward(
                             log, ptr<Out>(g.t), g.stride, ptr<Out>(out.t), out.stride, ptr<T>(dx),
                             out.cols, out.rows, out.cols, o, stream, &why);
                       }),
               why);
    return dx;
  }
  torch::Tensor keep_lengths, keep_mask;
  const rowsoftmax::masked_softmax_options m =
      masked ? masked_options(y, o, lengths, causal, diagonal, &keep_lengths)
             : rowsoftmax::masked_softmax_options{};
  const rowsoftmax::bool_masked_softmax_options b =
      mask.has_value() ? bool_masked_options(y, m, *mask, &keep_mask)
                       : rowsoftmax::bool_masked_softmax_options{};
  const cudaError_t e = by_dtype(y.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if (mask.has_value()) {
      return rowsoftmax_ext::options_backward(log, ptr<T>(g.t), g.stride, ptr<T>(out.t), out.stride,
                                              ptr<T>(dx), out.cols, out.rows, out.cols, b, stream,
                                              &why);
    }
    return masked ? rowsoftmax_ext::options_backward(log, ptr<T>(g.t), g.stride, ptr<T>(out.t),
                                                     out.stride, ptr<T>(dx), out.cols, out.rows,
                                                     out.cols, m, stream, &why)
                  : rowsoftmax_ext::options_backward(log, ptr<T>(g.t), g.stride, ptr<T>(out.t),
                                                     out.stride, ptr<T>(dx), out.cols, out.rows,
                                                     out.cols, o, stream, &why);
  });
  check_cuda(e, why);
  return dx;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "softmax over the last dimension (CUDA)");
  m.def("backward", &backward, "softmax backward over the last dimension: y * (dy - sum(dy * y))");
  m.def("fused_forward", &fused_forward,
        "fused softmax or log-softmax over the last dimension: (y, lse)", py::arg("x"),
        py::arg("scale"), py::arg("row_scale"), py::arg("log"), py::arg("zero_empty"),
        py::arg("return_lse"), py::arg("lengths"), py::arg("causal"), py::arg("diagonal"),
        py::arg("mask"), py::arg("bias"), py::arg("dtype"));
  m.def("fused_backward", &fused_backward,
        "fused softmax or log-softmax backward over the last dimension: dx", py::arg("dy"),
        py::arg("y"), py::arg("scale"), py::arg("row_scale"), py::arg("log"), py::arg("lengths"),
        py::arg("causal"), py::arg("diagonal"), py::arg("mask"), py::arg("dx_dtype"));
}
