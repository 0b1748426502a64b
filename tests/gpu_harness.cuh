// SPDX-License-Identifier: Apache-2.0
// Runs one softmax call on the GPU and checks it against the float64 reference: inputs drawn
// fresh from a seed, every byte of the output buffer poisoned with NaN first, every element of
// every row compared, per-row sums checked, and every byte outside the rows (row padding and
// guard zones) checked to be untouched.
#pragma once

// The plain ops' kernels come from the one instantiating unit (warnings_tu.cu, linked into the
// test binary), forced plans included: the GPU units compile only their fused kernels.
#include <rowsoftmax/extern.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reference.hpp"

namespace rowsoftmax::test {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define ROWSOFTMAX_REQUIRE_GPU() \
  if (!::rowsoftmax::test::have_gpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped"

inline ::testing::AssertionResult cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ")";
}
#define ROWSOFTMAX_CUDA_OK(expr) ASSERT_TRUE(::rowsoftmax::test::cuda_ok((expr), #expr))

/// A test's seed from its case's numbers.
inline std::uint64_t seed_of(std::int64_t a, std::int64_t b, std::int64_t c = 0) {
  return static_cast<std::uint64_t>(a) * 1000003u + static_cast<std::uint64_t>(b) * 10007u +
         static_cast<std::uint64_t>(c) + 17u;
}

/// Runs f(begin, end) over [0, n) on the host's cores, one contiguous range a core, each of at
/// least `grain` items (fewer threads for little work; none but the caller's for one range).
inline void parallel_rows(std::int64_t n, std::function<void(std::int64_t, std::int64_t)> const& f,
                          std::int64_t grain = 1) {
  const std::int64_t workers =
      std::max<std::int64_t>(1, std::min<std::int64_t>(std::thread::hardware_concurrency(),
                                                       n / std::max<std::int64_t>(grain, 1)));
  if (workers == 1) {
    if (n > 0) f(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::int64_t chunk = (n + workers - 1) / workers;
  for (std::int64_t b = 0; b < n; b += chunk) pool.emplace_back(f, b, std::min(n, b + chunk));
  for (auto& t : pool) t.join();
}

/// Elements a host chunk takes (fill_random, compare's check outside the rows): the chunks, and
/// so the data and the first error reported, do not depend on the host's cores.
inline constexpr std::int64_t host_chunk = std::int64_t{1} << 20;

template <class T>
struct device_buffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit device_buffer(std::size_t count) : n(count) {
    if (cudaMalloc(&ptr, count * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  ~device_buffer() {
    if (ptr) cudaFree(ptr);
  }
  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;
  /// Copies `h` in and waits for the copy to land: from pageable memory cudaMemcpy may return
  /// before it has, and a launch on a non-blocking stream would not wait for it.
  cudaError_t upload(std::vector<T> const& h) {
    const cudaError_t e = cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
  }
  cudaError_t download(std::vector<T>& h) const {
    h.resize(n);
    return cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
  }
};

/// What goes into the rows.
enum class fill {
  random,   ///< uniform in [-8, 8]
  special,  ///< rows cycle through NaN, +inf, all -inf, some -inf, huge, constant, random
};

/// One call's geometry. Strides of 0 mean "cols". Offsets are in elements from a 256-byte
/// aligned allocation, so an offset of 1 misaligns every row start that the stride leaves put.
struct shape {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  std::int64_t in_stride = 0;
  std::int64_t out_stride = 0;
  std::int64_t in_offset = 0;
  std::int64_t out_offset = 0;
  bool in_place = false;  ///< output aliases the (first) input: same buffer, offset, stride
  /// Elements of poison after each buffer's last row, checked untouched; 0: each tensor ends
  /// where its allocation does (for compute-sanitizer memcheck to see reads past it).
  std::int64_t guard = 64;

  std::int64_t ins() const { return in_stride ? in_stride : cols; }
  std::int64_t outs() const { return in_place ? ins() : (out_stride ? out_stride : cols); }
  std::int64_t outo() const { return in_place ? in_offset : out_offset; }
  std::string str() const {
    std::ostringstream s;
    s << rows << "x" << cols << " strides " << ins() << "/" << outs() << " offsets " << in_offset
      << "/" << outo() << (in_place ? " in-place" : "");
    return s.str();
  }
};

template <class T>
std::size_t buffer_elems(std::int64_t offset, std::int64_t stride, shape const& s) {
  return static_cast<std::size_t>(offset + (s.rows - 1) * stride + s.cols + s.guard);
}

template <class T>
T poison() {
  T v;
  std::memset(static_cast<void*>(&v), 0xFF, sizeof(T));  // NaN in every dtype
  return v;
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Random data for a whole buffer (rows and padding alike): chunk c of host_chunk elements from
/// its own stream, seeded by one draw of `g` and c, the chunks filled on all host cores.
template <class T>
void fill_random(std::vector<T>& v, rng& g, double lo, double hi) {
  const std::uint64_t seed = g.next();
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  parallel_rows((n + host_chunk - 1) / host_chunk, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      rng chunk(seed ^ (static_cast<std::uint64_t>(c) * 0xD1B54A32D192ED03ull));
      for (std::int64_t i = c * host_chunk; i < std::min(n, (c + 1) * host_chunk); ++i)
        v[static_cast<std::size_t>(i)] = dtype<T>::from_double(lo + (hi - lo) * chunk.uniform());
    }
  });
}

/// Overwrites row `r` of `buf` according to the special-value cycle.
template <class T>
void make_special_row(std::vector<T>& buf, std::int64_t base, std::int64_t cols, std::int64_t r,
                      rng& g) {
  const double inf = std::numeric_limits<double>::infinity();
  auto at = [&](std::int64_t j) -> T& { return buf[static_cast<std::size_t>(base + j)]; };
  switch (r % 8) {
    case 0:  // a NaN somewhere
      at(g.below(cols)) = dtype<T>::from_double(std::numeric_limits<double>::quiet_NaN());
      break;
    case 1:  // +inf somewhere
      at(g.below(cols)) = dtype<T>::from_double(inf);
      break;
    case 2:  // fully masked
      for (std::int64_t j = 0; j < cols; ++j) at(j) = dtype<T>::from_double(-inf);
      break;
    case 3:  // partly masked, at least one finite element left
      for (std::int64_t j = 0; j < cols; ++j)
        if (g.uniform() < 0.7) at(j) = dtype<T>::from_double(-inf);
      at(g.below(cols)) = dtype<T>::from_double(1.0);
      break;
    case 4:  // huge magnitudes of both signs
      for (std::int64_t j = 0; j < cols; ++j)
        at(j) = dtype<T>::from_double(dtype<T>::huge * (g.uniform() * 2 - 1));
      break;
    case 5:  // constant
      for (std::int64_t j = 0; j < cols; ++j) at(j) = dtype<T>::from_double(-3.25);
      break;
    case 6:  // the only finite value is the last one
      for (std::int64_t j = 0; j < cols; ++j) at(j) = dtype<T>::from_double(-inf);
      at(cols - 1) = dtype<T>::from_double(100.0);
      break;
    default:
      break;  // random
  }
}

/// `v`, or the infinity it rounds to in T where it lies beyond T's finite range.
template <class T>
double beyond_range(double v) {
  const double t = dtype<T>::to_double(dtype<T>::from_double(v));
  return std::isinf(t) ? t : v;
}

/// Compares one output buffer with the reference rows and checks that nothing outside the rows
/// changed (`untouched` holds the expected bytes there). NaN must meet NaN, an infinity the same
/// infinity (references beyond T's range are T's infinities); `softmax_rows`: each row without
/// those sums to the reference row's sum (1, or 0 for an empty row written as zeros). Returns a
/// failure message or "".
template <class T>
std::string compare(
    shape const& s, std::vector<T> const& out, std::vector<T> const& untouched, std::int64_t offset,
    std::int64_t stride,
    std::function<void(std::int64_t, std::vector<double>&, std::vector<double>&)> const& ref_row,
    bool softmax_rows) {
  std::vector<std::string> errors(static_cast<std::size_t>(s.rows));
  // At least a quarter million elements of rows a thread.
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 18) / s.cols);
  parallel_rows(
      s.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::vector<double> ref(static_cast<std::size_t>(s.cols)),
            scale(static_cast<std::size_t>(s.cols));
        for (std::int64_t r = r0; r < r1; ++r) {
          ref_row(r, ref, scale);
          const std::int64_t base = offset + r * stride;
          double err2 = 0, ref2 = 0, scale2 = 0, sum = 0, ref_sum = 0;
          bool finite_row = true;
          for (std::int64_t j = 0; j < s.cols; ++j) {
            const double o = dtype<T>::to_double(out[static_cast<std::size_t>(base + j)]);
            // A reference beyond T's range is the infinity T rounds it to (log-softmax of
            // rows of huge magnitudes).
            const double e = beyond_range<T>(ref[static_cast<std::size_t>(j)]);
            // NaN and infinities (log-softmax's -inf) exactly: NaN for NaN, the same infinity.
            if (!std::isfinite(e) || !std::isfinite(o)) {
              if (!(std::isnan(e) && std::isnan(o)) && o != e) {
                std::ostringstream m;
                m << "row " << r << " col " << j << ": got " << o << ", reference " << e;
                errors[static_cast<std::size_t>(r)] = m.str();
                break;
              }
              finite_row = false;
              continue;
            }
            const double bound =
                tolerance<T>::rel * scale[static_cast<std::size_t>(j)] + tolerance<T>::abs;
            if (!(std::abs(o - e) <= bound)) {
              std::ostringstream m;
              m << "row " << r << " col " << j << ": got " << o << ", reference " << e << " (bound "
                << bound << ")";
              errors[static_cast<std::size_t>(r)] = m.str();
              break;
            }
            err2 += (o - e) * (o - e);
            ref2 += e * e;
            scale2 += scale[static_cast<std::size_t>(j)] * scale[static_cast<std::size_t>(j)];
            sum += o;
            ref_sum += e;
          }
          if (!errors[static_cast<std::size_t>(r)].empty()) continue;
          // Normwise, tighter than the element bound: rounding errors average out over a row.
          if (std::sqrt(err2) > tolerance<T>::norm * std::sqrt(scale2) +
                                    tolerance<T>::abs * std::sqrt(double(s.cols))) {
            std::ostringstream m;
            m << "row " << r << ": normwise error " << std::sqrt(err2) << " against ||scale|| "
              << std::sqrt(scale2) << " (||ref|| " << std::sqrt(ref2) << ")";
            errors[static_cast<std::size_t>(r)] = m.str();
          } else if (softmax_rows && finite_row &&
                     std::abs(sum - ref_sum) >
                         tolerance<T>::row_sum + double(s.cols) * tolerance<T>::abs) {
            std::ostringstream m;
            m << "row " << r << ": sums to " << sum << ", reference " << ref_sum;
            errors[static_cast<std::size_t>(r)] = m.str();
          }
        }
      },
      grain);
  for (auto const& e : errors)
    if (!e.empty()) return e;
  // Every element outside the rows keeps its bytes: element i lies in row (i - offset) / stride
  // at column (i - offset) % stride (strides are at least cols; one row: any stride), tracked
  // element by element from each chunk's first. The first written element of each chunk, the
  // first over all reported.
  if (s.rows > 1 && stride < s.cols) return "rows overlap: stride below cols";
  const std::int64_t n = static_cast<std::int64_t>(out.size());
  const std::int64_t row_step = s.rows > 1 ? stride : n + 1;
  const std::int64_t chunks = (n + host_chunk - 1) / host_chunk;
  std::vector<std::int64_t> written(static_cast<std::size_t>(chunks), -1);
  parallel_rows(chunks, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t first = c * host_chunk, last = std::min(n, first + host_chunk);
      const std::int64_t k = first - offset;  // before the first row where negative
      std::int64_t r = k >= 0 ? k / row_step : -1, j = k >= 0 ? k % row_step : k;
      for (std::int64_t i = first; i < last; ++i) {
        const bool in_row = r >= 0 && r < s.rows && j < s.cols;
        if (!in_row &&
            !same_bits(out[static_cast<std::size_t>(i)], untouched[static_cast<std::size_t>(i)])) {
          written[static_cast<std::size_t>(c)] = i;
          break;
        }
        if (++j == row_step) {
          j = 0;
          ++r;
        } else if (j == 0) {
          r = 0;  // element i + 1 is the first row's first
        }
      }
    }
  });
  for (std::int64_t i : written)
    if (i >= 0) {
      std::ostringstream m;
      m << "element " << i << " outside the rows was written";
      return m.str();
    }
  return "";
}

/// The address of tensor `k` for plan queries, which read no tensor: 256-byte aligned, 2^40
/// bytes apart (no two overlap), never dereferenced.
template <class T>
T* fake_tensor(int k) {
  return reinterpret_cast<T*>((std::uintptr_t{1} << 44) + (std::uintptr_t(k) << 40));
}

/// Runs `enqueue(stream)` captured into a CUDA graph on a fresh stream, then replays the graph.
inline cudaError_t run_as_graph(std::function<cudaError_t(cudaStream_t)> const& enqueue) {
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  if (err == cudaSuccess) {
    const cudaError_t launch = enqueue(stream);
    err = cudaStreamEndCapture(stream, &graph);
    if (launch != cudaSuccess) err = launch;
  }
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (err == cudaSuccess) err = cudaGraphLaunch(exec, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  if (stream) cudaStreamDestroy(stream);
  return err;
}

/// Device scratch for the workspace launchers: at least `bytes` bytes (none for 0).
struct scratch {
  void* ptr = nullptr;
  explicit scratch(std::size_t bytes) {
    if (bytes > 0 && cudaMalloc(&ptr, bytes) != cudaSuccess) ptr = nullptr;
  }
  ~scratch() {
    if (ptr) cudaFree(ptr);
  }
  scratch(scratch const&) = delete;
  scratch& operator=(scratch const&) = delete;
};

/// Fills a workspace as an earlier call could have left it: every 8-byte word a partial of
/// FLT_MAX tagged as the first meeting's, so counters far past any target and partials that a
/// launcher that did not zero the workspace would take for this call's (see detail::meet).
inline cudaError_t make_stale(void* ws, std::size_t bytes) {
  std::vector<std::uint64_t> words(bytes / 8, (std::uint64_t{1} << 32) | 0x7f7fffffu);
  return cudaMemcpy(ws, words.data(), words.size() * 8, cudaMemcpyHostToDevice);
}

/// A launch: the public launcher (with a workspace when `workspace` is set: size query, then
/// the call), or a forced plan through the dispatcher (split plans get their workspace);
/// optionally captured into a CUDA graph and replayed. `stale`: the workspace is filled first
/// as an earlier call could have left it (make_stale).
template <class T>
struct launcher {
  std::optional<plan> forced;
  bool graph = false;
  bool workspace = false;
  bool stale = false;

  cudaError_t forward(T const* x, std::int64_t xs, T* y, std::int64_t ys, std::int64_t rows,
                      std::int64_t cols) const {
    std::size_t bytes = forced ? static_cast<std::size_t>(forced->workspace_bytes) : 0;
    if (!forced && workspace) {
      const cudaError_t err =
          softmax_forward<T>(nullptr, &bytes, x, xs, y, ys, rows, cols, nullptr);
      if (err != cudaSuccess) return err;
    }
    scratch ws(bytes);
    if (stale && ws.ptr) {
      const cudaError_t err = make_stale(ws.ptr, bytes);
      if (err != cudaSuccess) return err;
    }
    // A plan that needs no workspace runs only with a non-null one (the size query is the null
    // pointer); any pointer does.
    auto enqueue = [&](cudaStream_t stream) {
      if (!forced && workspace)
        return softmax_forward(ws.ptr ? ws.ptr : &bytes, &bytes, x, xs, y, ys, rows, cols, stream);
      if (!forced) return softmax_forward(x, xs, y, ys, rows, cols, stream);
      const detail::tensor_arg t[] = {{x, xs, false}, {y, ys, true}};
      return detail::run<detail::forward_op<T>>(*forced, t, {x, xs, y, ys, rows, cols}, stream,
                                                ws.ptr, bytes);
    };
    return graph ? run_as_graph(enqueue) : enqueue(nullptr);
  }
  cudaError_t backward(T const* dy, std::int64_t dys, T const* y, std::int64_t ys, T* dx,
                       std::int64_t dxs, std::int64_t rows, std::int64_t cols) const {
    std::size_t bytes = forced ? static_cast<std::size_t>(forced->workspace_bytes) : 0;
    if (!forced && workspace) {
      const cudaError_t err =
          softmax_backward<T>(nullptr, &bytes, dy, dys, y, ys, dx, dxs, rows, cols, nullptr);
      if (err != cudaSuccess) return err;
    }
    scratch ws(bytes);
    if (stale && ws.ptr) {
      const cudaError_t err = make_stale(ws.ptr, bytes);
      if (err != cudaSuccess) return err;
    }
    auto enqueue = [&](cudaStream_t stream) {
      if (!forced && workspace)
        return softmax_backward(ws.ptr ? ws.ptr : &bytes, &bytes, dy, dys, y, ys, dx, dxs, rows,
                                cols, stream);
      if (!forced) return softmax_backward(dy, dys, y, ys, dx, dxs, rows, cols, stream);
      const detail::tensor_arg t[] = {{dy, dys, false}, {y, ys, false}, {dx, dxs, true}};
      return detail::run<detail::backward_op<T>>(*forced, t, {dy, dys, y, ys, dx, dxs, rows, cols},
                                                 stream, ws.ptr, bytes);
    };
    return graph ? run_as_graph(enqueue) : enqueue(nullptr);
  }
};

/// Forward on fresh random data for shape `s`; checks every row. Use inside
/// ASSERT_NO_FATAL_FAILURE.
template <class T>
void check_forward(shape const& s, std::uint64_t seed, fill kind = fill::random,
                   launcher<T> const& launch = {}) {
  SCOPED_TRACE("forward " + std::string(dtype<T>::name) + " " + s.str() + " seed " +
               std::to_string(seed));
  rng g(seed);
  const std::int64_t xs = s.ins(), ys = s.outs();
  std::vector<T> x(buffer_elems<T>(s.in_offset, xs, s));
  fill_random(x, g, -8.0, 8.0);
  if (kind == fill::special)
    for (std::int64_t r = 0; r < s.rows; ++r)
      make_special_row(x, s.in_offset + r * xs, s.cols, r, g);
  std::vector<T> y_init =
      s.in_place ? x : std::vector<T>(buffer_elems<T>(s.out_offset, ys, s), poison<T>());

  device_buffer<T> dx_buf(x.size());
  device_buffer<T> dy_buf(s.in_place ? 1 : y_init.size());
  ASSERT_NE(dx_buf.ptr, nullptr);
  ASSERT_NE(dy_buf.ptr, nullptr);
  ROWSOFTMAX_CUDA_OK(dx_buf.upload(x));
  if (!s.in_place) ROWSOFTMAX_CUDA_OK(dy_buf.upload(y_init));
  T* xp = dx_buf.ptr + s.in_offset;
  T* yp = s.in_place ? xp : dy_buf.ptr + s.out_offset;
  ROWSOFTMAX_CUDA_OK(launch.forward(xp, xs, yp, ys, s.rows, s.cols));
  ROWSOFTMAX_CUDA_OK(cudaGetLastError());
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<T> out;
  ROWSOFTMAX_CUDA_OK(s.in_place ? dx_buf.download(out) : dy_buf.download(out));

  auto ref_row = [&](std::int64_t r, std::vector<double>& ref, std::vector<double>& scale) {
    std::vector<double> xr(static_cast<std::size_t>(s.cols));
    for (std::int64_t j = 0; j < s.cols; ++j)
      xr[static_cast<std::size_t>(j)] =
          dtype<T>::to_double(x[static_cast<std::size_t>(s.in_offset + r * xs + j)]);
    reference_forward(xr.data(), ref.data(), s.cols);
    for (std::size_t j = 0; j < ref.size(); ++j) scale[j] = std::abs(ref[j]);
  };
  const std::string err = compare<T>(s, out, y_init, s.outo(), ys, ref_row, true);
  EXPECT_EQ(err, "");
}

/// Backward on fresh data: y = softmax of random logits (rounded to T), dy uniform in [-1, 1].
/// `in_place`: dx aliases dy.
template <class T>
void check_backward(shape const& s, std::uint64_t seed, fill kind = fill::random,
                    launcher<T> const& launch = {}) {
  SCOPED_TRACE("backward " + std::string(dtype<T>::name) + " " + s.str() + " seed " +
               std::to_string(seed));
  rng g(seed);
  const std::int64_t in_s = s.ins(), out_s = s.outs();
  // dy and y share the input geometry (stride, offset); dx has the output geometry.
  std::vector<T> dy(buffer_elems<T>(s.in_offset, in_s, s)), y(dy.size());
  fill_random(dy, g, -1.0, 1.0);
  fill_random(y, g, 0.0, 1.0);
  {
    // Each row from its own stream (one draw of `g` a row), the rows on all host cores.
    std::vector<std::uint64_t> row_seeds(static_cast<std::size_t>(s.rows));
    for (auto& seed : row_seeds) seed = g.next();
    parallel_rows(
        s.rows,
        [&](std::int64_t r0, std::int64_t r1) {
          std::vector<double> logits(static_cast<std::size_t>(s.cols)), prob(logits.size());
          for (std::int64_t r = r0; r < r1; ++r) {
            rng gr(row_seeds[static_cast<std::size_t>(r)]);
            for (auto& l : logits) l = gr.uniform() * 16 - 8;
            if (kind == fill::special && r % 4 == 1)
              logits[static_cast<std::size_t>(gr.below(s.cols))] =
                  -std::numeric_limits<double>::infinity();
            reference_forward(logits.data(), prob.data(), s.cols);
            for (std::int64_t j = 0; j < s.cols; ++j)
              y[static_cast<std::size_t>(s.in_offset + r * in_s + j)] =
                  dtype<T>::from_double(prob[static_cast<std::size_t>(j)]);
            if (kind == fill::special && r % 4 == 2)
              dy[static_cast<std::size_t>(s.in_offset + r * in_s + gr.below(s.cols))] =
                  dtype<T>::from_double(std::numeric_limits<double>::quiet_NaN());
            if (kind == fill::special && r % 4 == 3)
              for (std::int64_t j = 0; j < s.cols; ++j)
                dy[static_cast<std::size_t>(s.in_offset + r * in_s + j)] =
                    dtype<T>::from_double(1e4 * (gr.uniform() - 0.5));
          }
        },
        std::max<std::int64_t>(1, (std::int64_t{1} << 18) / s.cols));
  }
  std::vector<T> dx_init =
      s.in_place ? dy : std::vector<T>(buffer_elems<T>(s.out_offset, out_s, s), poison<T>());

  device_buffer<T> dy_buf(dy.size()), y_buf(y.size()), dx_buf(s.in_place ? 1 : dx_init.size());
  ASSERT_NE(dy_buf.ptr, nullptr);
  ASSERT_NE(y_buf.ptr, nullptr);
  ASSERT_NE(dx_buf.ptr, nullptr);
  ROWSOFTMAX_CUDA_OK(dy_buf.upload(dy));
  ROWSOFTMAX_CUDA_OK(y_buf.upload(y));
  if (!s.in_place) ROWSOFTMAX_CUDA_OK(dx_buf.upload(dx_init));
  T* dyp = dy_buf.ptr + s.in_offset;
  T* yp = y_buf.ptr + s.in_offset;
  T* dxp = s.in_place ? dyp : dx_buf.ptr + s.out_offset;
  ROWSOFTMAX_CUDA_OK(launch.backward(dyp, in_s, yp, in_s, dxp, out_s, s.rows, s.cols));
  ROWSOFTMAX_CUDA_OK(cudaGetLastError());
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<T> out;
  ROWSOFTMAX_CUDA_OK(s.in_place ? dy_buf.download(out) : dx_buf.download(out));
  std::vector<T> y_after;
  ROWSOFTMAX_CUDA_OK(y_buf.download(y_after));
  for (std::size_t i = 0; i < y.size(); ++i)
    ASSERT_TRUE(same_bits(y[i], y_after[i])) << "y changed at " << i;

  auto ref_row = [&](std::int64_t r, std::vector<double>& ref, std::vector<double>& scale) {
    std::vector<double> dyr(static_cast<std::size_t>(s.cols)), yr(dyr.size());
    for (std::int64_t j = 0; j < s.cols; ++j) {
      dyr[static_cast<std::size_t>(j)] =
          dtype<T>::to_double(dy[static_cast<std::size_t>(s.in_offset + r * in_s + j)]);
      yr[static_cast<std::size_t>(j)] =
          dtype<T>::to_double(y[static_cast<std::size_t>(s.in_offset + r * in_s + j)]);
    }
    reference_backward(dyr.data(), yr.data(), ref.data(), s.cols);
    double dot = 0;
    for (std::size_t j = 0; j < yr.size(); ++j) dot += std::abs(dyr[j] * yr[j]);
    for (std::size_t j = 0; j < yr.size(); ++j)
      scale[j] = std::abs(yr[j]) * (std::abs(dyr[j]) + dot);
  };
  const std::string err = compare<T>(s, out, dx_init, s.outo(), out_s, ref_row, false);
  EXPECT_EQ(err, "");
}

}  // namespace rowsoftmax::test
