// SPDX-License-Identifier: Apache-2.0
// Softmax forward and backward on the GPU, checked against float64 on the CPU: four rows of 1000
// columns through the launchers without a workspace, then two rows of 3 million columns through
// the workspace launchers (size query, one allocation, the calls).
#include <rowsoftmax/rowsoftmax.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

// Returns 1 from the calling function if `call` fails, printing the call and the error.
#define CHECK(call)                                                    \
  do {                                                                 \
    const cudaError_t err_ = (call);                                   \
    if (err_ != cudaSuccess) {                                         \
      std::printf("%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      return 1;                                                        \
    }                                                                  \
  } while (0)

// Returns 1 from the calling function if the launcher call `call` fails, printing the call, the
// error and, where the arguments were refused (cudaErrorInvalidValue), which one and why: `why`
// is the explain_forward / explain_backward call with the launcher's arguments.
#define CHECK_SOFTMAX(call, why)                                             \
  do {                                                                       \
    const cudaError_t err_ = (call);                                         \
    if (err_ != cudaSuccess) {                                               \
      const char* why_ = err_ == cudaErrorInvalidValue ? (why) : nullptr;    \
      std::printf("%s failed: %s%s%s\n", #call, cudaGetErrorString(err_),    \
                  why_ != nullptr ? ": " : "", why_ != nullptr ? why_ : ""); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

namespace {

/// Device memory for n floats.
struct device_buffer {
  float* ptr = nullptr;
  explicit device_buffer(std::size_t n) {
    if (cudaMalloc(&ptr, n * sizeof(float)) != cudaSuccess) ptr = nullptr;
  }
  ~device_buffer() { cudaFree(ptr); }
  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;
};

/// The largest error of `y` = softmax(x) and of `dx` = y (dy - sum(dy y)) against float64, each
/// element's relative to its own scale (y's: its reference; dx's: y (|dy| + sum |dy y|), the
/// size of the terms it is computed from).
struct errors {
  double forward = 0, backward = 0;
};

errors check(std::vector<float> const& x, std::vector<float> const& y, std::vector<float> const& dy,
             std::vector<float> const& dx, std::int64_t rows, std::int64_t cols) {
  errors e;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * cols;
    double m = -INFINITY, s = 0;
    for (std::int64_t j = 0; j < cols; ++j) m = std::fmax(m, xr[j]);
    for (std::int64_t j = 0; j < cols; ++j) s += std::exp(double(xr[j]) - m);
    // The backward reference takes the y the GPU produced, as autograd would.
    double dot = 0, dot_abs = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      dot += double(dy[r * cols + j]) * y[r * cols + j];
      dot_abs += std::fabs(double(dy[r * cols + j]) * y[r * cols + j]);
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(r * cols + j);
      const double ref = std::exp(double(xr[j]) - m) / s;
      e.forward = std::fmax(e.forward, std::fabs(y[k] - ref) / ref);
      const double dref = double(y[k]) * (double(dy[k]) - dot);
      const double scale = double(y[k]) * (std::fabs(double(dy[k])) + dot_abs);
      if (scale > 0) e.backward = std::fmax(e.backward, std::fabs(dx[k] - dref) / scale);
    }
  }
  return e;
}

/// Forward then backward of `rows` x `cols` random rows; with a workspace when `workspace`.
int run(std::int64_t rows, std::int64_t cols, bool workspace) {
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::vector<float> x(n), dy(n), y(n), dx(n);
  unsigned state = 12345u;
  auto uniform = [&state] {  // in [-1, 1)
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  for (std::size_t i = 0; i < n; ++i) x[i] = 8.0f * uniform();
  for (std::size_t i = 0; i < n; ++i) dy[i] = uniform();

  device_buffer d_x(n), d_y(n), d_dy(n), d_dx(n);
  if (!d_x.ptr || !d_y.ptr || !d_dy.ptr || !d_dx.ptr) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  CHECK(cudaMemcpy(d_x.ptr, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_dy.ptr, dy.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  // The plans the calls below launch (printed, not needed to run them).
  rowsoftmax::plan fwd, bwd;
  CHECK(rowsoftmax::softmax_forward_plan<float>(d_x.ptr, cols, d_y.ptr, cols, rows, cols, &fwd,
                                                workspace));
  CHECK(rowsoftmax::softmax_backward_plan<float>(d_dy.ptr, cols, d_y.ptr, cols, d_dx.ptr, cols,
                                                 rows, cols, &bwd, workspace));
  std::printf("%lld x %lld%s\n  forward plan:  %s\n  backward plan: %s\n",
              static_cast<long long>(rows), static_cast<long long>(cols),
              workspace ? ", with a workspace" : "", rowsoftmax::to_string(fwd).c_str(),
              rowsoftmax::to_string(bwd).c_str());

  if (!workspace) {
    // The whole API: one call, asynchronous on the given stream, returns cudaError_t.
    CHECK_SOFTMAX(rowsoftmax::softmax_forward(d_x.ptr, d_y.ptr, rows, cols, /*stream=*/nullptr),
                  rowsoftmax::explain_forward(d_x.ptr, d_y.ptr, rows, cols));
    CHECK_SOFTMAX(rowsoftmax::softmax_backward(d_dy.ptr, d_y.ptr, d_dx.ptr, rows, cols, nullptr),
                  rowsoftmax::explain_backward(d_dy.ptr, d_y.ptr, d_dx.ptr, rows, cols));
    CHECK(cudaDeviceSynchronize());
  } else {
    // CUB's convention: a null workspace asks for its size; then the call with one. One
    // allocation serves both directions (a workspace holds nothing between calls, but two calls
    // that may run at once need one each).
    std::size_t forward_bytes = 0, backward_bytes = 0;
    CHECK_SOFTMAX(
        rowsoftmax::softmax_forward(nullptr, &forward_bytes, d_x.ptr, d_y.ptr, rows, cols),
        rowsoftmax::explain_forward(nullptr, &forward_bytes, d_x.ptr, d_y.ptr, rows, cols));
    CHECK_SOFTMAX(rowsoftmax::softmax_backward(nullptr, &backward_bytes, d_dy.ptr, d_y.ptr,
                                               d_dx.ptr, rows, cols),
                  rowsoftmax::explain_backward(nullptr, &backward_bytes, d_dy.ptr, d_y.ptr,
                                               d_dx.ptr, rows, cols));
    std::size_t bytes = std::max(forward_bytes, backward_bytes);
    std::printf("  workspace: %zu bytes forward, %zu backward\n", forward_bytes, backward_bytes);
    void* ws = nullptr;
    CHECK(cudaMalloc(&ws, std::max<std::size_t>(bytes, 1)));  // non-null even for 0 bytes
    const char* why = nullptr;
    const cudaError_t err = [&] {
      cudaError_t e = rowsoftmax::softmax_forward(ws, &bytes, d_x.ptr, d_y.ptr, rows, cols);
      if (e == cudaErrorInvalidValue)
        why = rowsoftmax::explain_forward(ws, &bytes, d_x.ptr, d_y.ptr, rows, cols);
      if (e == cudaSuccess)
        e = rowsoftmax::softmax_backward(ws, &bytes, d_dy.ptr, d_y.ptr, d_dx.ptr, rows, cols);
      if (e == cudaErrorInvalidValue && why == nullptr)
        why = rowsoftmax::explain_backward(ws, &bytes, d_dy.ptr, d_y.ptr, d_dx.ptr, rows, cols);
      if (e == cudaSuccess) e = cudaDeviceSynchronize();  // before the workspace is freed
      return e;
    }();
    cudaFree(ws);
    CHECK_SOFTMAX(err, why);
  }
  CHECK(cudaMemcpy(y.data(), d_y.ptr, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dx.data(), d_dx.ptr, n * sizeof(float), cudaMemcpyDeviceToHost));

  const errors e = check(x, y, dy, dx, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += y[static_cast<std::size_t>(r * cols + j)];
    std::printf("  row %lld: sum %.7f\n", static_cast<long long>(r), sum);
  }
  std::printf("  max relative error vs float64: forward %.3g, backward %.3g\n", e.forward,
              e.backward);
  const double bound = 2.0 * 0x1p-24 + 1e-5;  // two float roundings and float sums
  if (e.forward <= bound && e.backward <= bound) return 0;
  std::printf("  FAILED: an error above %.3g\n", bound);
  return 1;
}

}  // namespace

int main() {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s; nothing to run\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 0;
  }
  const int short_rows = run(4, 1000, false);
  const int long_rows = run(2, 3000000, true);
  return short_rows != 0 || long_rows != 0 ? 1 : 0;
}
