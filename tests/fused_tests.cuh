// SPDX-License-Identifier: Apache-2.0
// The GPU suite of the fused launchers (fused.cuh): softmax and log-softmax with a scale, per-row
// scales, the row log-sum-exp and both empty-row policies, forward and backward, against a float64
// reference on fresh data, outputs poisoned, bytes outside the rows checked untouched, through
// every tier (planned, and every configuration forced). Typed over the element type; each
// test_gpu_fused_<type>.cu instantiates it for one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <rowsoftmax/extern_fused.cuh>

#include "gpu_harness.cuh"

namespace rowsoftmax::test {

/// A fused call's options as the tests draw them: the scale, per-row scales (drawn into a device
/// array, some 0 and some negative), the log-sum-exp output, the empty-row policy.
struct fused_case {
  bool log = false;
  float scale = 1.0f;
  bool row_scales = false;
  bool lse = false;
  empty_rows empty = empty_rows::nan;
  // Prefix masks (masked_softmax_options, the masked launchers) where `lengths` or `causal`.
  int lengths = 0;  // 0: none; 1: one a row; 2: one a batch; 3: one a (batch, query)
  bool causal = false;
  int diagonal = 0;  // 0: 0 (top-left); 1: cols - queries (bottom-right); 2: -2
  // A boolean mask (bool_masked_softmax_options): 0: none; 1: one a row; 2: one a batch (key
  // padding); 3: one a (batch, query), broadcast over heads, starting at an odd address.
  int keep = 0;
  // An additive bias (biased_softmax_options): 0: none; 1: of type T, one a row; 2: float, one a
  // head (ALiBi's broadcast), some elements -inf (a float mask) and every 4th head's row wholly
  // -inf; 3: float, one a (batch, query), starting one element past a 16-byte boundary.
  int bias = 0;
  bool masked() const { return lengths != 0 || causal || keep != 0 || bias != 0; }
  std::string str() const {
    return std::string(log ? "log-softmax" : "softmax") + " scale " + std::to_string(scale) +
           (row_scales ? " row scales" : "") + (lse ? " lse" : "") +
           (empty == empty_rows::zero ? " empty->0" : " empty->nan") +
           (lengths != 0 ? " lengths mode " + std::to_string(lengths) : "") +
           (causal ? " causal diagonal mode " + std::to_string(diagonal) : "") +
           (keep != 0 ? " bool mask mode " + std::to_string(keep) : "") +
           (bias != 0 ? " bias mode " + std::to_string(bias) : "");
  }
};

/// The (heads, queries) a masked test reads its rows as: some of each where the rows divide.
struct attention_shape {
  std::int64_t heads;
  std::int64_t queries;
};
inline attention_shape attention_of(std::int64_t rows) {
  std::int64_t q = std::max<std::int64_t>(1, rows / 4);
  while (rows % q != 0) --q;
  std::int64_t h = std::min<std::int64_t>(rows / q, 3);
  while ((rows / q) % h != 0) --h;
  return {h, q};
}

/// A masked case's lengths (host copy, strides) and the columns each row keeps, computed here
/// apart from the library's kernels.
struct prefix_masks {
  attention_shape at{1, 1};
  std::vector<int> lengths;
  broadcast_strides strides{};
  std::int64_t diagonal = 0;
  std::vector<std::int64_t> kept;  // one a row
  // The boolean mask's bytes, row r's at keep_at(r) (after `keep_offset` bytes of the buffer).
  std::vector<unsigned char> keep;
  broadcast_strides keep_strides{0, 0, 0};
  std::int64_t keep_offset = 0;
  // The bias, as floats (of type T's values where bias mode 1), row r's at bias_at(r).
  std::vector<float> bias;
  broadcast_strides bias_strides{0, 0, 0};
  std::int64_t bias_offset = 0;

  std::int64_t bias_at(std::int64_t r) const {
    const std::int64_t q = at.queries, h = at.heads;
    return bias_offset + r / (h * q) * bias_strides.batch + r / q % h * bias_strides.head +
           r % q * bias_strides.query;
  }
  /// Row r's bias of column j (0 without a bias).
  float bias_of(std::int64_t r, std::int64_t j) const {
    return bias.empty() ? 0.0f : bias[static_cast<std::size_t>(bias_at(r) + j)];
  }

  std::int64_t keep_at(std::int64_t r) const {
    const std::int64_t q = at.queries, h = at.heads;
    return keep_offset + r / (h * q) * keep_strides.batch + r / q % h * keep_strides.head +
           r % q * keep_strides.query;
  }
  /// Whether row r keeps column j: before its prefix masks' end and, with a boolean mask, its
  /// byte not 0.
  bool keeps(std::int64_t r, std::int64_t j) const {
    if (j >= kept[static_cast<std::size_t>(r)]) return false;
    return keep.empty() || keep[static_cast<std::size_t>(keep_at(r) + j)] != 0;
  }

  prefix_masks(fused_case const& c, std::int64_t rows, std::int64_t cols, rng& g) {
    kept.assign(static_cast<std::size_t>(rows), cols);
    if (!c.masked() || rows == 0) return;
    at = attention_of(rows);
    const std::int64_t h = at.heads, q = at.queries, b = rows / (h * q);
    diagonal = c.diagonal == 0 ? 0 : c.diagonal == 1 ? cols - q : -2;
    std::int64_t n = 0;
    if (c.lengths == 1) {
      strides = {h * q, q, 1};
      n = rows;
    } else if (c.lengths == 2) {
      strides = {1, 0, 0};
      n = b;
    } else if (c.lengths == 3) {
      strides = {q, 0, 1};
      n = b * q;
    }
    lengths.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      int v = static_cast<int>(g.below(cols + 1));
      if (i % 3 == 2) v = static_cast<int>(cols);
      if (i % 5 == 4) v = 0;
      if (i % 7 == 6) v = static_cast<int>(cols + 3);
      if (i % 11 == 10) v = -2;
      if (i % 13 == 12) v = 1;
      lengths[static_cast<std::size_t>(i)] = v;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t qi = r % q, hi = r / q % h, bi = r / (h * q);
      std::int64_t k = cols;
      if (c.causal) k = std::min(k, std::max<std::int64_t>(qi + diagonal + 1, 0));
      if (c.lengths != 0) {
        const int len = lengths[static_cast<std::size_t>(bi * strides.batch + hi * strides.head +
                                                         qi * strides.query)];
        k = std::min<std::int64_t>(k, std::max(len, 0));
      }
      kept[static_cast<std::size_t>(r)] = k;
    }
    if (c.bias != 0) {
      // Multiples of 1/16 in [-4, 4]: exact in every element type.
      std::int64_t bias_rows = rows;
      if (c.bias == 1) {
        bias_strides = {h * q * cols, q * cols, cols};
      } else if (c.bias == 2) {
        bias_strides = {0, cols, 0};
        bias_rows = h;
      } else {
        bias_strides = {q * cols, 0, cols};
        bias_rows = b * q;
        bias_offset = 1;
      }
      bias.assign(static_cast<std::size_t>(bias_offset + bias_rows * cols), 0.0f);
      for (std::int64_t i = 0; i < bias_rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          float v = static_cast<float>(static_cast<int>(g.below(129)) - 64) / 16.0f;
          if (c.bias == 2 && (g.below(16) == 0 || i % 4 == 3))
            v = -std::numeric_limits<float>::infinity();
          bias[static_cast<std::size_t>(bias_offset + i * cols + j)] = v;
        }
    }
    if (c.keep == 0) return;
    // Mask rows: most bytes keep (1, 2 or 255: any byte but 0 keeps), a quarter mask; every 9th
    // mask row masks every column.
    std::int64_t mask_rows = rows;
    if (c.keep == 1) {
      keep_strides = {h * q * cols, q * cols, cols};
    } else if (c.keep == 2) {
      keep_strides = {cols, 0, 0};
      mask_rows = b;
    } else {
      keep_strides = {q * cols, 0, cols};
      mask_rows = b * q;
      keep_offset = 1;
    }
    keep.assign(static_cast<std::size_t>(keep_offset + mask_rows * cols), 0);
    const unsigned char kept_values[3] = {1, 2, 255};
    for (std::int64_t i = 0; i < mask_rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        keep[static_cast<std::size_t>(keep_offset + i * cols + j)] =
            i % 9 == 8 || g.below(4) == 0 ? 0 : kept_values[g.below(3)];
  }

  /// The masked options of case `c`, its lengths at `device_lengths`.
  masked_softmax_options options(fused_case const& c, softmax_options const& base,
                                 int const* device_lengths) const {
    masked_softmax_options o;
    static_cast<softmax_options&>(o) = base;
    o.heads = at.heads;
    o.queries = at.queries;
    o.lengths = c.lengths != 0 ? device_lengths : nullptr;
    o.lengths_strides = strides;
    o.causal = c.causal;
    o.diagonal = diagonal;
    return o;
  }
  /// The boolean-masked options of case `c` (with a boolean mask), its mask at `device_keep`
  /// (the buffer: the mask starts keep_offset bytes in).
  bool_masked_softmax_options keep_options(fused_case const& c, softmax_options const& base,
                                           int const* device_lengths,
                                           unsigned char const* device_keep) const {
    bool_masked_softmax_options o;
    static_cast<masked_softmax_options&>(o) = options(c, base, device_lengths);
    o.keep = keep.empty() ? nullptr : reinterpret_cast<bool const*>(device_keep + keep_offset);
    o.keep_strides = keep_strides;
    return o;
  }
  /// The biased options of case `c` (with a bias), its bias at `device_bias` (the buffer, of
  /// type T where bias mode 1, else float: the bias starts bias_offset elements in).
  template <class T>
  biased_softmax_options bias_options(fused_case const& c, softmax_options const& base,
                                      int const* device_lengths, unsigned char const* device_keep,
                                      void const* device_bias) const {
    biased_softmax_options o;
    static_cast<bool_masked_softmax_options&>(o) =
        keep_options(c, base, device_lengths, device_keep);
    const bool f32 = c.bias != 1;
    o.bias_dtype = f32 ? bias_type::f32 : bias_type::input;
    o.bias = f32 ? static_cast<void const*>(static_cast<float const*>(device_bias) + bias_offset)
                 : static_cast<void const*>(static_cast<T const*>(device_bias) + bias_offset);
    o.bias_strides = bias_strides;
    return o;
  }
  /// The bias as the device holds it: bytes of T (bias mode 1) or float elements.
  template <class T>
  std::vector<unsigned char> bias_bytes(fused_case const& c) const {
    std::vector<unsigned char> b;
    if (c.bias == 1) {
      std::vector<T> t(bias.size());
      for (std::size_t i = 0; i < bias.size(); ++i) t[i] = dtype<T>::from_double(bias[i]);
      b.resize(t.size() * sizeof(T));
      std::memcpy(b.data(), t.data(), b.size());
    } else {
      b.resize(bias.size() * sizeof(float));
      std::memcpy(b.data(), bias.data(), b.size());
    }
    return b;
  }
};

/// The logit the library takes: s * x rounded to float, -inf kept whatever the scale.
inline double logit(float s, double x) {
  if (x == -std::numeric_limits<double>::infinity()) return x;
  return static_cast<double>(s * static_cast<float>(x));
}

/// The biased logit the library takes: logit + bias rounded to float, -inf kept whatever the
/// bias.
inline double biased_logit(float s, double x, float b) {
  const double p = logit(s, x);
  if (p == -std::numeric_limits<double>::infinity()) return p;
  return static_cast<double>(static_cast<float>(p) + b);
}

/// Forward of one row of logits z in float64: softmax or log-softmax, torch's special-value rules
/// (a NaN or +inf makes the row NaN; a row of only -inf is NaN, or under empty_rows::zero 0 /
/// -inf), and the row's log-sum-exp (-inf for an empty row, NaN where the row is NaN).
inline double reference_fused_forward(std::vector<double> const& z, bool log, empty_rows empty,
                                      std::vector<double>& y) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double m = -inf;
  bool has_nan = false;
  for (double v : z) {
    has_nan = has_nan || std::isnan(v);
    m = std::max(m, v);
  }
  if (has_nan || m == inf) {
    std::fill(y.begin(), y.end(), nan);
    return nan;
  }
  if (m == -inf) {
    std::fill(y.begin(), y.end(), empty == empty_rows::zero ? (log ? -inf : 0.0) : nan);
    return -inf;
  }
  double s = 0;
  for (double v : z) s += std::exp(v - m);
  const double ls = std::log(s);
  for (std::size_t j = 0; j < z.size(); ++j) y[j] = log ? (z[j] - m) - ls : std::exp(z[j] - m) / s;
  return m + ls;
}

/// A launch of a fused call: planned (with a workspace where `workspace`) or a forced plan.
/// Forward reads x of T and writes y of Out; backward reads dy and y of Out and writes dx of T.
template <class T, class Out = T>
struct fused_launcher {
  std::optional<plan> forced;
  bool workspace = false;
  bool graph = false;

  template <class Op, class Call, class Planned>
  cudaError_t go(Call const& call, Planned&& planned) const {
    std::size_t bytes = forced ? static_cast<std::size_t>(forced->workspace_bytes) : 0;
    if (!forced && workspace) {
      const cudaError_t err = planned(nullptr, &bytes, nullptr);
      if (err != cudaSuccess) return err;
    }
    scratch ws(bytes);
    auto enqueue = [&](cudaStream_t stream) {
      if (!forced && workspace) return planned(ws.ptr ? ws.ptr : &bytes, &bytes, stream);
      if (!forced) return planned(nullptr, nullptr, stream);
      return detail::run<Op>(*forced, call.tensors, call.args, stream, ws.ptr, bytes);
    };
    return graph ? run_as_graph(enqueue) : enqueue(nullptr);
  }

  template <bool Log, class Options>
  cudaError_t forward(T const* x, std::int64_t xs, Out* y, std::int64_t ys, std::int64_t rows,
                      std::int64_t cols, Options const& o) const {
    constexpr bool masked = detail::is_masked_options_v<Options>;
    constexpr bool keep = detail::has_keep_v<Options>, bias = detail::has_bias_v<Options>;
    const detail::fused_forward_call<T, Log, masked, keep, bias, Out> call(x, xs, y, ys, rows, cols,
                                                                           o);
    return go<detail::fused_forward_op<T, Log, masked, keep, bias, Out>>(
        call, [&](void* w, std::size_t* b, cudaStream_t s) -> cudaError_t {
          if constexpr (Log) {
            return b ? log_softmax_forward(w, b, x, xs, y, ys, rows, cols, o, s)
                     : log_softmax_forward(x, xs, y, ys, rows, cols, o, s);
          } else {
            return b ? softmax_forward(w, b, x, xs, y, ys, rows, cols, o, s)
                     : softmax_forward(x, xs, y, ys, rows, cols, o, s);
          }
        });
  }
  template <bool Log, class Options>
  cudaError_t backward(Out const* dy, std::int64_t dys, Out const* y, std::int64_t ys, T* dx,
                       std::int64_t dxs, std::int64_t rows, std::int64_t cols,
                       Options const& o) const {
    constexpr bool masked = detail::is_masked_options_v<Options>;
    constexpr bool keep = detail::has_keep_v<Options>, bias = detail::has_bias_v<Options>;
    const detail::fused_backward_call<T, Log, masked, keep, bias, Out> call(dy, dys, y, ys, dx, dxs,
                                                                            rows, cols, o);
    return go<detail::fused_backward_op<Out, Log, masked, keep, bias, T>>(
        call, [&](void* w, std::size_t* b, cudaStream_t s) -> cudaError_t {
          if constexpr (Log) {
            return b ? log_softmax_backward(w, b, dy, dys, y, ys, dx, dxs, rows, cols, o, s)
                     : log_softmax_backward(dy, dys, y, ys, dx, dxs, rows, cols, o, s);
          } else {
            return b ? softmax_backward(w, b, dy, dys, y, ys, dx, dxs, rows, cols, o, s)
                     : softmax_backward(dy, dys, y, ys, dx, dxs, rows, cols, o, s);
          }
        });
  }
};

/// Per-row scales: mostly in [-2, 2], every 7th row 0, every 5th negative.
inline std::vector<float> draw_row_scales(std::int64_t rows, rng& g) {
  std::vector<float> r(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    float v = static_cast<float>(0.25 + 1.75 * g.uniform());
    if (i % 5 == 4) v = -v;
    if (i % 7 == 6) v = 0.0f;
    r[static_cast<std::size_t>(i)] = v;
  }
  return r;
}

/// The scale each row takes (the library's product, rounded to float).
inline std::vector<float> row_scales_of(fused_case const& c, std::vector<float> const& rs,
                                        std::int64_t rows) {
  std::vector<float> s(static_cast<std::size_t>(rows), c.scale);
  if (c.row_scales)
    for (std::int64_t i = 0; i < rows; ++i)
      s[static_cast<std::size_t>(i)] = c.scale * rs[static_cast<std::size_t>(i)];
  return s;
}

/// The name of a call's types: T's, or "T->Out" where the output's differs.
template <class T, class Out>
std::string types_name() {
  if constexpr (std::is_same_v<T, Out>) {
    return dtype<T>::name;
  } else {
    return std::string(dtype<T>::name) + "->" + dtype<Out>::name;
  }
}

/// `v` as a buffer of Out where Out is T (in place), else a poisoned buffer of `n` elements.
template <class Out, class T>
std::vector<Out> output_init(bool in_place, std::vector<T> const& v, std::size_t n) {
  if constexpr (std::is_same_v<T, Out>) {
    if (in_place) return v;
  }
  return std::vector<Out>(n, poison<Out>());
}

/// Fused forward on fresh data for shape `s` and case `c`, x of T and y of Out; checks every
/// row, the row LSE (and the guard after it) and the bytes outside the rows.
template <class T, class Out = T>
void check_fused_forward(shape const& s, fused_case const& c, std::uint64_t seed,
                         fill kind = fill::random, fused_launcher<T, Out> const& launch = {}) {
  SCOPED_TRACE("fused forward " + (types_name<T, Out>()) + " " + s.str() + " " + c.str() +
               " seed " + std::to_string(seed));
  if (!std::is_same_v<T, Out> && s.in_place) FAIL() << "in place needs one type";
  rng g(seed);
  const std::int64_t xs = s.ins(), ys = s.outs();
  std::vector<T> x(buffer_elems<T>(s.in_offset, xs, s));
  fill_random(x, g, -8.0, 8.0);
  if (kind == fill::special)
    for (std::int64_t r = 0; r < s.rows; ++r)
      make_special_row(x, s.in_offset + r * xs, s.cols, r, g);
  const std::vector<float> rs = draw_row_scales(s.rows, g);
  const std::vector<float> scales = row_scales_of(c, rs, s.rows);
  const prefix_masks masks(c, s.rows, s.cols, g);
  const std::vector<Out> y_init =
      output_init<Out>(s.in_place, x, buffer_elems<Out>(s.out_offset, ys, s));

  device_buffer<T> x_buf(x.size());
  device_buffer<Out> y_buf(s.in_place ? 1 : y_init.size());
  device_buffer<float> rs_buf(rs.size()), lse_buf(static_cast<std::size_t>(s.rows) + 16);
  device_buffer<int> len_buf(std::max<std::size_t>(masks.lengths.size(), 1));
  if (!masks.lengths.empty()) ROWSOFTMAX_CUDA_OK(len_buf.upload(masks.lengths));
  device_buffer<unsigned char> keep_buf(std::max<std::size_t>(masks.keep.size(), 1));
  if (!masks.keep.empty()) ROWSOFTMAX_CUDA_OK(keep_buf.upload(masks.keep));
  ASSERT_NE(keep_buf.ptr, nullptr);
  const std::vector<unsigned char> bias_bytes = masks.bias_bytes<T>(c);
  device_buffer<unsigned char> bias_buf(std::max<std::size_t>(bias_bytes.size(), 1));
  if (!bias_bytes.empty()) ROWSOFTMAX_CUDA_OK(bias_buf.upload(bias_bytes));
  ASSERT_NE(bias_buf.ptr, nullptr);
  ASSERT_NE(x_buf.ptr, nullptr);
  ASSERT_NE(y_buf.ptr, nullptr);
  ASSERT_NE(rs_buf.ptr, nullptr);
  ASSERT_NE(lse_buf.ptr, nullptr);
  ROWSOFTMAX_CUDA_OK(x_buf.upload(x));
  if (!s.in_place) ROWSOFTMAX_CUDA_OK(y_buf.upload(y_init));
  ROWSOFTMAX_CUDA_OK(rs_buf.upload(rs));
  const std::vector<float> lse_init(lse_buf.n, poison<float>());
  ROWSOFTMAX_CUDA_OK(lse_buf.upload(lse_init));
  T* xp = x_buf.ptr + s.in_offset;
  Out* yp = s.in_place ? reinterpret_cast<Out*>(xp) : y_buf.ptr + s.out_offset;
  softmax_options o;
  o.scale = c.scale;
  o.row_scale = c.row_scales ? rs_buf.ptr : nullptr;
  o.row_lse = c.lse ? lse_buf.ptr : nullptr;
  o.empty = c.empty;
  const auto launch_with = [&](auto const& opts) {
    return c.log ? launch.template forward<true>(xp, xs, yp, ys, s.rows, s.cols, opts)
                 : launch.template forward<false>(xp, xs, yp, ys, s.rows, s.cols, opts);
  };
  // Other output types: softmax_options' features (the project compiles those variants alone).
  if constexpr (!std::is_same_v<T, Out>) {
    ASSERT_FALSE(c.masked()) << "other output types are tested with softmax_options";
    ROWSOFTMAX_CUDA_OK(launch_with(o));
  } else if (c.bias != 0) {
    ROWSOFTMAX_CUDA_OK(
        launch_with(masks.bias_options<T>(c, o, len_buf.ptr, keep_buf.ptr, bias_buf.ptr)));
  } else if (c.keep != 0) {
    ROWSOFTMAX_CUDA_OK(launch_with(masks.keep_options(c, o, len_buf.ptr, keep_buf.ptr)));
  } else if (c.masked()) {
    ROWSOFTMAX_CUDA_OK(launch_with(masks.options(c, o, len_buf.ptr)));
  } else {
    ROWSOFTMAX_CUDA_OK(launch_with(o));
  }
  ROWSOFTMAX_CUDA_OK(cudaGetLastError());
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<Out> out;
  if constexpr (std::is_same_v<T, Out>) {
    ROWSOFTMAX_CUDA_OK(s.in_place ? x_buf.download(out) : y_buf.download(out));
  } else {
    ROWSOFTMAX_CUDA_OK(y_buf.download(out));
  }
  std::vector<float> lse;
  ROWSOFTMAX_CUDA_OK(lse_buf.download(lse));

  std::vector<double> lse_ref(static_cast<std::size_t>(s.rows));
  auto ref_row = [&](std::int64_t r, std::vector<double>& ref, std::vector<double>& scale) {
    std::vector<double> z(static_cast<std::size_t>(s.cols));
    const float sr = scales[static_cast<std::size_t>(r)];
    for (std::int64_t j = 0; j < s.cols; ++j)
      z[static_cast<std::size_t>(j)] =
          !masks.keeps(r, j)
              ? -std::numeric_limits<double>::infinity()
              : biased_logit(
                    sr, dtype<T>::to_double(x[static_cast<std::size_t>(s.in_offset + r * xs + j)]),
                    masks.bias_of(r, j));
    lse_ref[static_cast<std::size_t>(r)] = reference_fused_forward(z, c.log, c.empty, ref);
    // Log-softmax: the error of (z - M) - ln S is relative to the terms' size, at least 1 (ln S).
    for (std::size_t j = 0; j < ref.size(); ++j)
      scale[j] = c.log ? std::abs(ref[j]) + 1.0 : std::abs(ref[j]);
  };
  const std::string err = compare<Out>(s, out, y_init, s.outo(), ys, ref_row, !c.log);
  EXPECT_EQ(err, "");
  for (std::int64_t r = 0; r < s.rows && c.lse; ++r) {
    const double e = lse_ref[static_cast<std::size_t>(r)], o_ = lse[static_cast<std::size_t>(r)];
    if (std::isnan(e) || std::isinf(e)) {
      ASSERT_TRUE((std::isnan(e) && std::isnan(o_)) || e == o_)
          << "row " << r << " lse " << o_ << ", reference " << e;
    } else {
      ASSERT_LE(std::abs(o_ - e), 4e-6 * (std::abs(e) + 1.0))
          << "row " << r << " lse " << o_ << ", reference " << e;
    }
  }
  const std::size_t lse_untouched = c.lse ? static_cast<std::size_t>(s.rows) : 0;
  for (std::size_t i = lse_untouched; i < lse.size(); ++i)
    ASSERT_TRUE(same_bits(lse[i], lse_init[i])) << "row_lse element " << i << " written";
}

/// Fused backward on fresh data: y the forward's output (softmax or log-softmax of random logits,
/// rounded to Out, the forward's output type), dy uniform in [-1, 1] (special: NaN and large
/// values in some rows), dx of T (the forward's input type).
template <class T, class Out = T>
void check_fused_backward(shape const& s, fused_case const& c, std::uint64_t seed,
                          fill kind = fill::random, fused_launcher<T, Out> const& launch = {}) {
  SCOPED_TRACE("fused backward " + (types_name<T, Out>()) + " " + s.str() + " " + c.str() +
               " seed " + std::to_string(seed));
  if (!std::is_same_v<T, Out> && s.in_place) FAIL() << "in place needs one type";
  rng g(seed);
  const std::int64_t in_s = s.ins(), out_s = s.outs();
  std::vector<Out> dy(buffer_elems<Out>(s.in_offset, in_s, s)), y(dy.size());
  fill_random(dy, g, -1.0, 1.0);
  fill_random(y, g, c.log ? -20.0 : 0.0, c.log ? 0.0 : 1.0);
  std::vector<std::uint64_t> row_seeds(static_cast<std::size_t>(s.rows));
  for (auto& rs_ : row_seeds) rs_ = g.next();
  parallel_rows(
      s.rows,
      [&](std::int64_t r0, std::int64_t r1) {
        std::vector<double> z(static_cast<std::size_t>(s.cols)), p(z.size());
        for (std::int64_t r = r0; r < r1; ++r) {
          rng gr(row_seeds[static_cast<std::size_t>(r)]);
          for (auto& l : z) l = gr.uniform() * 16 - 8;
          if (kind == fill::special && r % 4 == 1)
            z[static_cast<std::size_t>(gr.below(s.cols))] =
                -std::numeric_limits<double>::infinity();
          reference_fused_forward(z, c.log, empty_rows::nan, p);
          for (std::int64_t j = 0; j < s.cols; ++j)
            y[static_cast<std::size_t>(s.in_offset + r * in_s + j)] =
                dtype<Out>::from_double(p[static_cast<std::size_t>(j)]);
          if (kind == fill::special && r % 4 == 2)
            dy[static_cast<std::size_t>(s.in_offset + r * in_s + gr.below(s.cols))] =
                dtype<Out>::from_double(std::numeric_limits<double>::quiet_NaN());
          if (kind == fill::special && r % 4 == 3)
            for (std::int64_t j = 0; j < s.cols; ++j)
              dy[static_cast<std::size_t>(s.in_offset + r * in_s + j)] =
                  dtype<Out>::from_double(1e4 * (gr.uniform() - 0.5));
        }
      },
      std::max<std::int64_t>(1, (std::int64_t{1} << 18) / s.cols));
  const std::vector<float> rs = draw_row_scales(s.rows, g);
  const std::vector<float> scales = row_scales_of(c, rs, s.rows);
  const prefix_masks masks(c, s.rows, s.cols, g);
  const std::vector<T> dx_init =
      output_init<T>(s.in_place, dy, buffer_elems<T>(s.out_offset, out_s, s));

  device_buffer<Out> dy_buf(dy.size()), y_buf(y.size());
  device_buffer<T> dx_buf(s.in_place ? 1 : dx_init.size());
  device_buffer<float> rs_buf(rs.size());
  device_buffer<int> len_buf(std::max<std::size_t>(masks.lengths.size(), 1));
  if (!masks.lengths.empty()) ROWSOFTMAX_CUDA_OK(len_buf.upload(masks.lengths));
  device_buffer<unsigned char> keep_buf(std::max<std::size_t>(masks.keep.size(), 1));
  if (!masks.keep.empty()) ROWSOFTMAX_CUDA_OK(keep_buf.upload(masks.keep));
  ASSERT_NE(keep_buf.ptr, nullptr);
  const std::vector<unsigned char> bias_bytes = masks.bias_bytes<T>(c);
  device_buffer<unsigned char> bias_buf(std::max<std::size_t>(bias_bytes.size(), 1));
  if (!bias_bytes.empty()) ROWSOFTMAX_CUDA_OK(bias_buf.upload(bias_bytes));
  ASSERT_NE(bias_buf.ptr, nullptr);
  ASSERT_NE(dy_buf.ptr, nullptr);
  ASSERT_NE(y_buf.ptr, nullptr);
  ASSERT_NE(dx_buf.ptr, nullptr);
  ASSERT_NE(rs_buf.ptr, nullptr);
  ROWSOFTMAX_CUDA_OK(dy_buf.upload(dy));
  ROWSOFTMAX_CUDA_OK(y_buf.upload(y));
  ROWSOFTMAX_CUDA_OK(rs_buf.upload(rs));
  if (!s.in_place) ROWSOFTMAX_CUDA_OK(dx_buf.upload(dx_init));
  Out* dyp = dy_buf.ptr + s.in_offset;
  Out* yp = y_buf.ptr + s.in_offset;
  T* dxp = s.in_place ? reinterpret_cast<T*>(dyp) : dx_buf.ptr + s.out_offset;
  softmax_options o;
  o.scale = c.scale;
  o.row_scale = c.row_scales ? rs_buf.ptr : nullptr;
  o.empty = c.empty;
  auto launch_with = [&](auto const& opts) {
    return c.log ? launch.template backward<true>(dyp, in_s, yp, in_s, dxp, out_s, s.rows, s.cols,
                                                  opts)
                 : launch.template backward<false>(dyp, in_s, yp, in_s, dxp, out_s, s.rows, s.cols,
                                                   opts);
  };
  // Biased: backward takes the forward's options and does not read the bias. Other output
  // types: softmax_options' features (the project compiles those variants alone).
  if constexpr (!std::is_same_v<T, Out>) {
    ASSERT_FALSE(c.masked()) << "other output types are tested with softmax_options";
    ROWSOFTMAX_CUDA_OK(launch_with(o));
  } else {
    ROWSOFTMAX_CUDA_OK(
        c.bias != 0
            ? launch_with(masks.bias_options<T>(c, o, len_buf.ptr, keep_buf.ptr, bias_buf.ptr))
        : c.keep != 0 ? launch_with(masks.keep_options(c, o, len_buf.ptr, keep_buf.ptr))
        : c.masked()  ? launch_with(masks.options(c, o, len_buf.ptr))
                      : launch_with(o));
  }
  ROWSOFTMAX_CUDA_OK(cudaGetLastError());
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<T> out;
  if constexpr (std::is_same_v<T, Out>) {
    ROWSOFTMAX_CUDA_OK(s.in_place ? dy_buf.download(out) : dx_buf.download(out));
  } else {
    ROWSOFTMAX_CUDA_OK(dx_buf.download(out));
  }

  auto ref_row = [&](std::int64_t r, std::vector<double>& ref, std::vector<double>& scale) {
    const double sr = scales[static_cast<std::size_t>(r)];
    double dot = 0, dot_abs = 0;
    // Masked columns: dy and y not used (taken as 0 and -inf), dx exactly 0.
    std::vector<double> dyr(static_cast<std::size_t>(s.cols), 0.0),
        yr(dyr.size(), c.log ? -std::numeric_limits<double>::infinity() : 0.0);
    for (std::int64_t j = 0; j < s.cols; ++j) {
      if (!masks.keeps(r, j)) continue;
      const auto i = static_cast<std::size_t>(s.in_offset + r * in_s + j);
      dyr[static_cast<std::size_t>(j)] = dtype<Out>::to_double(dy[i]);
      yr[static_cast<std::size_t>(j)] = dtype<Out>::to_double(y[i]);
    }
    for (std::size_t j = 0; j < dyr.size(); ++j) {
      const double w = c.log ? dyr[j] : dyr[j] * yr[j];
      dot += w;
      dot_abs += std::abs(w);
    }
    for (std::size_t j = 0; j < dyr.size(); ++j) {
      if (!masks.keeps(r, static_cast<std::int64_t>(j))) {
        ref[j] = 0.0;
        scale[j] = 0.0;
      } else if (c.log) {
        const double p = std::exp(yr[j]);
        ref[j] = sr * (dyr[j] - p * dot);
        scale[j] = std::abs(sr) * (std::abs(dyr[j]) + p * dot_abs);
      } else {
        ref[j] = sr * (yr[j] * (dyr[j] - dot));
        scale[j] = std::abs(sr) * std::abs(yr[j]) * (std::abs(dyr[j]) + dot_abs);
      }
    }
  };
  const std::string err = compare<T>(s, out, dx_init, s.outo(), out_s, ref_row, false);
  EXPECT_EQ(err, "");
}

template <class T>
class Fused : public ::testing::Test {
 protected:
  void SetUp() override { ROWSOFTMAX_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE_P(Fused);

/// The cases a shape runs: each feature alone and together, both directions' ops.
inline std::vector<fused_case> fused_cases() {
  return {
      {false, 1.0f, false, true, empty_rows::nan},   // plain softmax through the fused kernels
      {true, 1.0f, false, true, empty_rows::nan},    // log-softmax
      {false, 0.37f, true, true, empty_rows::zero},  // temperature and per-row scales
      {true, -1.5f, false, true, empty_rows::zero},  // negative scale, log
      {true, 2.0f, true, true, empty_rows::nan},
      {false, 0.0f, false, true, empty_rows::nan},  // uniform rows
  };
}

/// The masked cases: lengths in each broadcast, causal with each diagonal, the two together,
/// with the fused features.
inline std::vector<fused_case> masked_cases() {
  return {
      {false, 1.0f, false, true, empty_rows::nan, 1, false, 0},  // a length a row
      {true, 1.0f, false, true, empty_rows::zero, 2, false, 0},  // log, a length a batch
      {false, 0.5f, true, true, empty_rows::zero, 0, true, 0},   // causal top-left
      {true, -1.5f, false, true, empty_rows::nan, 0, true, 1},   // causal bottom-right
      {false, 2.0f, false, true, empty_rows::zero, 3, true, 2},  // both, diagonal -2
      {true, 0.0f, true, true, empty_rows::nan, 3, true, 1},
  };
}

/// The boolean-masked cases: each broadcast of the mask, alone and with the prefix masks, with
/// the fused features.
inline std::vector<fused_case> bool_mask_cases() {
  return {
      {false, 1.0f, false, true, empty_rows::nan, 0, false, 0, 1},  // a mask a row
      {true, 1.0f, false, true, empty_rows::zero, 2, false, 0, 2},  // log, key padding, lengths
      {false, 0.5f, true, true, empty_rows::zero, 0, true, 1, 3},   // causal, odd address
      {true, -1.5f, false, true, empty_rows::nan, 1, false, 0, 1},  // log, negative scale
  };
}

/// The biased cases: each bias type and broadcast, alone and with the masks, with the fused
/// features.
inline std::vector<fused_case> bias_cases() {
  return {
      {false, 1.0f, false, true, empty_rows::nan, 0, false, 0, 0, 1},   // T, a bias a row
      {true, 0.5f, true, true, empty_rows::zero, 0, false, 0, 0, 2},    // log, ALiBi-like, -inf
      {false, -1.5f, false, true, empty_rows::zero, 2, true, 1, 0, 3},  // masks, odd address
      {true, 1.0f, false, true, empty_rows::nan, 0, false, 0, 2, 2},    // key padding and bias
      {false, 0.0f, true, true, empty_rows::zero, 0, false, 0, 1, 1},   // zero scale: bias only
      {true, -1.0f, true, true, empty_rows::nan, 1, true, 0, 3, 1},     // every mask, T bias
  };
}

template <class T>
std::vector<shape> fused_layouts(std::int64_t rows, std::int64_t cols) {
  const std::int64_t v = 16 / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t aligned = (cols + v - 1) / v * v;
  return {
      {rows, cols, aligned, aligned, 0, 0, false},
      {rows, cols, aligned + 1, aligned + 1, 1, 1, false},
      {rows, cols, aligned, aligned, 0, 1, false},
      {rows, cols, cols, cols, 1, 1, false},  // contiguous, misaligned (tiled where short)
  };
}

// Planned calls over the tiers: short rows (several a thread, tiled), one CTA, clusters, staged
// (16-bit forward), streaming (in place past a cluster) and split rows (the workspace in the
// output, and with a workspace), every layout, each case; x of T, y of Out (in place where they
// are one type).
template <class T, class Out = T>
void every_tier_planned(std::vector<fused_case> const& cases, std::int64_t salt) {
  const std::int64_t table[] = {1, 7, 33, 130, 1000, 4097, 20000, 50257, 131072, 300001};
  for (std::int64_t cols : table)
    for (std::int64_t rows :
         {std::int64_t{3}, cols <= 1000 ? std::int64_t{517} : std::int64_t{0}}) {
      if (rows == 0) continue;
      const auto ls = fused_layouts<T>(rows, cols);
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const shape s = ls[i % ls.size()];
        check_fused_forward<T, Out>(s, cases[i],
                                    seed_of(cols, rows, static_cast<std::int64_t>(i) + salt));
        check_fused_backward<T, Out>(s, cases[i],
                                     seed_of(cols, rows, static_cast<std::int64_t>(i) + 50 + salt));
      }
    }
  // Split rows with a workspace, and rows past a cluster in place (streaming).
  fused_launcher<T, Out> with_workspace;
  with_workspace.workspace = true;
  for (std::int64_t cols : {std::int64_t{600001}, (std::int64_t{1} << 20) + 3})
    for (std::size_t i = 0; i < cases.size(); i += 2) {
      const shape s = fused_layouts<T>(3, cols)[i / 2 % 2];
      check_fused_forward<T, Out>(s, cases[i],
                                  seed_of(cols, 3, static_cast<std::int64_t>(i) + salt),
                                  fill::random, with_workspace);
      check_fused_forward<T, Out>(s, cases[i + 1],
                                  seed_of(cols, 3, static_cast<std::int64_t>(i) + 1 + salt));
      check_fused_backward<T, Out>(s, cases[i + 1],
                                   seed_of(cols, 3, static_cast<std::int64_t>(i) + 7 + salt),
                                   fill::random, with_workspace);
      if (!std::is_same_v<T, Out>) continue;
      shape in_place = s;
      in_place.in_place = true;
      check_fused_forward<T, Out>(in_place, cases[i],
                                  seed_of(cols, 3, static_cast<std::int64_t>(i) + 9 + salt));
      check_fused_backward<T, Out>(in_place, cases[i],
                                   seed_of(cols, 3, static_cast<std::int64_t>(i) + 11 + salt));
    }
}

TYPED_TEST_P(Fused, EveryTierPlanned) {
  every_tier_planned<TypeParam>(fused_cases(), 0);
}

// The masked launchers (lengths, causal) over the same tiers: the columns they remove are not
// read, written as 0 (-inf), their dx 0.
TYPED_TEST_P(Fused, MaskedEveryTierPlanned) {
  every_tier_planned<TypeParam>(masked_cases(), 1000);
}

// The boolean mask (bool_masked_softmax_options) over the same tiers: its masked columns written
// as 0 (-inf), their dx 0, with the prefix masks or alone.
TYPED_TEST_P(Fused, BoolMaskEveryTierPlanned) {
  every_tier_planned<TypeParam>(bool_mask_cases(), 2000);
}

// The additive bias (biased_softmax_options) over the same tiers: of type T and float,
// broadcast, with -inf in it, with the masks or alone; backward with the same options.
TYPED_TEST_P(Fused, BiasEveryTierPlanned) {
  every_tier_planned<TypeParam>(bias_cases(), 3000);
}

// Special values (NaN, +inf, rows of only -inf, huge, constant) under both empty-row policies,
// negative and zero scales, over the tiers.
template <class T, class Out = T>
void special_values(std::vector<fused_case> const& cases) {
  fused_launcher<T, Out> with_workspace;
  with_workspace.workspace = true;
  for (std::int64_t cols : {1, 2, 33, 4097, 50257, 300001, 1048579})
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const shape s = fused_layouts<T>(16, cols)[i % 3];
      const auto& launch = cols > 500000 ? with_workspace : fused_launcher<T, Out>{};
      check_fused_forward<T, Out>(s, cases[i], seed_of(cols, 16, static_cast<std::int64_t>(i) + 20),
                                  fill::special, launch);
      check_fused_backward<T, Out>(
          s, cases[i], seed_of(cols, 16, static_cast<std::int64_t>(i) + 30), fill::special, launch);
    }
}

TYPED_TEST_P(Fused, SpecialValuesAndEmptyRows) {
  special_values<TypeParam>(fused_cases());
}
TYPED_TEST_P(Fused, MaskedSpecialValues) {
  special_values<TypeParam>(masked_cases());
}
TYPED_TEST_P(Fused, BoolMaskSpecialValues) {
  special_values<TypeParam>(bool_mask_cases());
}
TYPED_TEST_P(Fused, BiasSpecialValues) {
  special_values<TypeParam>(bias_cases());
}

// Every kernel configuration that can hold the row, forced (as the plain suite's
// EveryConfigurationThatHoldsTheRow): the fused ops through each kernel, the cases in turn; x of
// T, y of Out (each direction's plan made for the type it reads: forward T, backward Out).
template <class T, class Out = T>
void every_configuration(std::vector<fused_case> const& cases) {
  int turn = 0;
  // The forced plan of configuration c for shape s, rows of elements of `elem` bytes.
  const auto forced_plan = [](shape const& s, int c, std::size_t elem) -> std::optional<plan> {
    const std::int64_t v = 16 / static_cast<std::int64_t>(elem);
    const bool vec_ok = s.in_offset % v == s.outo() % v;
    const bool contiguous = s.ins() == s.cols && s.outs() == s.cols && std::is_same_v<T, Out>;
    const row_layout layout =
        vec_ok ? row_layout{static_cast<int>(v), s.in_offset % v != 0 || s.ins() % v != 0,
                            contiguous, true}
               : row_layout{1, false, false, true};
    auto const& k = detail::kernel_configs[c];
    if ((layout.vec == 1 && !k.scalar_ok) || (k.tiled && !layout.contiguous)) return std::nullopt;
    const std::int64_t windows = detail::row_windows(k, layout, s.cols);
    const std::int64_t fewest = std::max<std::int64_t>(
        2, detail::ceil_div(windows, detail::window_capacity(k, layout.vec, elem, 1)));
    const std::int64_t n = k.algo == algorithm::staged ? std::min<std::int64_t>(fewest, 16)
                           : k.clustered               ? fewest
                                                       : 1;
    if (n > 16) return std::nullopt;
    plan p = detail::make_plan(c, layout, s.rows, windows, elem, int(n));
    if (k.algo == algorithm::streaming) p.stash_tiles = 1;
    if (k.algo == algorithm::split) {
      p = detail::with_groups(p, 2, 3);
      p.stash_tiles = 1;
    }
    if (k.algo == algorithm::staged_split)
      p = detail::with_groups(p, 2, std::max<std::int64_t>(3, fewest));
    if (!detail::plan_holds(p)) return std::nullopt;
    return p;
  };
  for (std::int64_t cols : {130, 600, 5000, 70000})
    for (shape s : fused_layouts<T>(5, cols))
      for (int c = 0; c < detail::num_kernel_configs; ++c) {
        const std::optional<plan> fp = forced_plan(s, c, sizeof(T));
        const std::optional<plan> bp = forced_plan(s, c, sizeof(Out));
        if (!fp && !bp) continue;
        const fused_case& fc = cases[static_cast<std::size_t>(turn++) % cases.size()];
        if (fp && detail::has_kernel(c, direction::forward, fp->vec, sizeof(T))) {
          SCOPED_TRACE("config " + std::to_string(c) + ": " + to_string(*fp));
          fused_launcher<T, Out> forced;
          forced.forced = *fp;
          check_fused_forward<T, Out>(s, fc, seed_of(cols, c, 61), fill::random, forced);
        }
        if (bp && detail::has_kernel(c, direction::backward, bp->vec, sizeof(Out))) {
          SCOPED_TRACE("config " + std::to_string(c) + ": " + to_string(*bp));
          fused_launcher<T, Out> forced;
          forced.forced = *bp;
          check_fused_backward<T, Out>(s, fc, seed_of(cols, c, 62), fill::random, forced);
        }
      }
}

TYPED_TEST_P(Fused, EveryConfigurationThatHoldsTheRow) {
  every_configuration<TypeParam>(fused_cases());
}
TYPED_TEST_P(Fused, MaskedEveryConfiguration) {
  every_configuration<TypeParam>(masked_cases());
}
TYPED_TEST_P(Fused, BoolMaskEveryConfiguration) {
  every_configuration<TypeParam>(bool_mask_cases());
}
TYPED_TEST_P(Fused, BiasEveryConfiguration) {
  every_configuration<TypeParam>(bias_cases());
}

// A captured graph reads the per-row scales when it runs: replayed after new scales are copied
// in, it gives the new rows' softmax.
TYPED_TEST_P(Fused, GraphReadsRowScalesWhenItRuns) {
  using T = TypeParam;
  constexpr std::int64_t rows = 4, cols = 3000;
  std::vector<T> x(rows * cols);
  rng g(7);
  fill_random(x, g, -4.0, 4.0);
  device_buffer<T> x_buf(x.size()), y_buf(x.size());
  device_buffer<float> rs_buf(rows);
  ROWSOFTMAX_CUDA_OK(x_buf.upload(x));
  softmax_options o;
  o.row_scale = rs_buf.ptr;
  cudaStream_t stream = nullptr;
  ROWSOFTMAX_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ROWSOFTMAX_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t launched =
      softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o, stream);
  ROWSOFTMAX_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  ROWSOFTMAX_CUDA_OK(launched);
  ROWSOFTMAX_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (float base : {1.0f, 0.5f, -2.0f}) {
    const std::vector<float> rs{base, 2 * base, 0.0f, -base};
    ROWSOFTMAX_CUDA_OK(rs_buf.upload(rs));
    ROWSOFTMAX_CUDA_OK(cudaGraphLaunch(exec, stream));
    ROWSOFTMAX_CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<T> y;
    ROWSOFTMAX_CUDA_OK(y_buf.download(y));
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<double> z(cols), ref(cols);
      for (std::int64_t j = 0; j < cols; ++j)
        z[static_cast<std::size_t>(j)] =
            logit(rs[static_cast<std::size_t>(r)], dtype<T>::to_double(x[r * cols + j]));
      reference_fused_forward(z, false, empty_rows::nan, ref);
      for (std::int64_t j = 0; j < cols; ++j)
        ASSERT_NEAR(dtype<T>::to_double(y[r * cols + j]), ref[static_cast<std::size_t>(j)],
                    tolerance<T>::rel * ref[static_cast<std::size_t>(j)] + tolerance<T>::abs)
            << "scale " << base << " row " << r << " col " << j;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// A captured graph reads the lengths when it runs: replayed after new lengths are copied in, it
// keeps each row's new prefix (and zeros the rest).
TYPED_TEST_P(Fused, GraphReadsLengthsWhenItRuns) {
  using T = TypeParam;
  constexpr std::int64_t rows = 4, cols = 3000;
  std::vector<T> x(rows * cols);
  rng g(11);
  fill_random(x, g, -4.0, 4.0);
  device_buffer<T> x_buf(x.size()), y_buf(x.size());
  device_buffer<int> len_buf(rows);
  ROWSOFTMAX_CUDA_OK(x_buf.upload(x));
  masked_softmax_options o;
  o.lengths = len_buf.ptr;
  o.empty = empty_rows::zero;
  cudaStream_t stream = nullptr;
  ROWSOFTMAX_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ROWSOFTMAX_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t launched =
      softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o, stream);
  ROWSOFTMAX_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  ROWSOFTMAX_CUDA_OK(launched);
  ROWSOFTMAX_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 0; round < 3; ++round) {
    const std::vector<int> lengths{1 + 1000 * round, 2999 - round, 0, 7 * round + 2};
    ROWSOFTMAX_CUDA_OK(len_buf.upload(lengths));
    ROWSOFTMAX_CUDA_OK(cudaGraphLaunch(exec, stream));
    ROWSOFTMAX_CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<T> y;
    ROWSOFTMAX_CUDA_OK(y_buf.download(y));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t kept = lengths[static_cast<std::size_t>(r)];
      std::vector<double> z(cols, -std::numeric_limits<double>::infinity()), ref(cols);
      for (std::int64_t j = 0; j < kept; ++j)
        z[static_cast<std::size_t>(j)] = dtype<T>::to_double(x[r * cols + j]);
      reference_fused_forward(z, false, empty_rows::zero, ref);
      for (std::int64_t j = 0; j < cols; ++j)
        ASSERT_NEAR(dtype<T>::to_double(y[r * cols + j]), ref[static_cast<std::size_t>(j)],
                    tolerance<T>::rel * ref[static_cast<std::size_t>(j)] + tolerance<T>::abs)
            << "round " << round << " row " << r << " col " << j << " length " << kept;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Refused options launch nothing: the output keeps its bytes.
TYPED_TEST_P(Fused, RefusedOptionsWriteNothing) {
  using T = TypeParam;
  constexpr std::int64_t rows = 3, cols = 100;
  device_buffer<T> x_buf(rows * cols), y_buf(rows * cols);
  device_buffer<float> f(8);
  const std::vector<T> poisoned(rows * cols, poison<T>());
  ROWSOFTMAX_CUDA_OK(y_buf.upload(poisoned));
  ROWSOFTMAX_CUDA_OK(x_buf.upload(poisoned));
  softmax_options bad[4];
  bad[0].scale = std::numeric_limits<float>::infinity();
  bad[1].row_scale = reinterpret_cast<float const*>(reinterpret_cast<char const*>(f.ptr) + 2);
  bad[2].row_lse = reinterpret_cast<float*>(reinterpret_cast<char*>(f.ptr) + 1);
  bad[3].empty = static_cast<empty_rows>(7);
  for (auto const& o : bad) {
    EXPECT_EQ(softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    EXPECT_EQ(log_softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    EXPECT_NE(explain_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o), nullptr);
  }
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<T> y;
  ROWSOFTMAX_CUDA_OK(y_buf.download(y));
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(same_bits(y[i], poisoned[i])) << i;
}

// Refused masks launch nothing: the output keeps its bytes.
TYPED_TEST_P(Fused, RefusedMasksWriteNothing) {
  using T = TypeParam;
  constexpr std::int64_t rows = 6, cols = 100;
  device_buffer<T> x_buf(rows * cols), y_buf(rows * cols);
  device_buffer<int> len(8);
  const std::vector<T> poisoned(rows * cols, poison<T>());
  ROWSOFTMAX_CUDA_OK(y_buf.upload(poisoned));
  ROWSOFTMAX_CUDA_OK(x_buf.upload(poisoned));
  masked_softmax_options bad[7];
  bad[0].heads = 0;
  bad[1].queries = 4;  // 6 rows are no multiple of 4
  bad[2].heads = 2;
  bad[2].queries = 2;
  bad[3].lengths = reinterpret_cast<int const*>(reinterpret_cast<char const*>(len.ptr) + 2);
  bad[4].lengths = len.ptr;
  bad[4].lengths_strides.query = -1;
  bad[5].lengths = reinterpret_cast<int const*>(y_buf.ptr) + 3;  // the output
  bad[6].lengths = len.ptr;
  bad[6].lengths_strides.batch = std::int64_t{1} << 61;
  for (auto const& o : bad) {
    EXPECT_EQ(softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    EXPECT_EQ(
        log_softmax_backward(x_buf.ptr, cols, x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
        cudaErrorInvalidValue);
    const char* why = explain_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o);
    EXPECT_NE(why, nullptr);
  }
  device_buffer<unsigned char> keep(cols);
  bool_masked_softmax_options bad_keep[3];
  bad_keep[0].keep = reinterpret_cast<bool const*>(keep.ptr);
  bad_keep[0].keep_strides.head = -1;
  bad_keep[1].keep = reinterpret_cast<bool const*>(y_buf.ptr) + 5;  // the output
  bad_keep[2].keep = reinterpret_cast<bool const*>(keep.ptr);
  bad_keep[2].keep_strides.batch = std::int64_t{1} << 61;
  for (auto const& o : bad_keep) {
    EXPECT_EQ(softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    EXPECT_EQ(
        log_softmax_backward(x_buf.ptr, cols, x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
        cudaErrorInvalidValue);
    EXPECT_NE(explain_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o), nullptr);
  }
  // Biases: forward refuses them (backward does not read the bias, and takes them).
  device_buffer<float> bias(cols + 1);
  biased_softmax_options bad_bias[5];
  bad_bias[0].bias = bias.ptr;
  bad_bias[0].bias_dtype = static_cast<bias_type>(5);
  bad_bias[1].bias = reinterpret_cast<char const*>(bias.ptr) + 2;  // a float at 2 bytes
  bad_bias[1].bias_dtype = bias_type::f32;
  bad_bias[2].bias = bias.ptr;
  bad_bias[2].bias_strides.query = -1;
  bad_bias[3].bias = y_buf.ptr + 7;  // the output
  bad_bias[4].bias = bias.ptr;
  bad_bias[4].bias_strides.batch = std::int64_t{1} << 61;
  for (auto const& o : bad_bias) {
    EXPECT_EQ(softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    EXPECT_EQ(log_softmax_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              cudaErrorInvalidValue);
    const char* why = explain_forward(x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o);
    EXPECT_NE(why, nullptr);
    if (why != nullptr) EXPECT_NE(std::string(why).find("options.bias"), std::string::npos) << why;
    EXPECT_EQ(explain_backward(x_buf.ptr, cols, x_buf.ptr, cols, y_buf.ptr, cols, rows, cols, o),
              nullptr);
  }
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<T> y;
  ROWSOFTMAX_CUDA_OK(y_buf.download(y));
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(same_bits(y[i], poisoned[i])) << i;
}

// compute-sanitizer's subset of the fused ops: a short row, a cluster row, a staged or split
// row with the workspace in the output, each direction and both ops, tensors that end where their
// allocations do.
TYPED_TEST_P(Fused, SanitizerSubset) {
  using T = TypeParam;
  const auto cases = fused_cases();
  for (std::int64_t cols : {33, 20000, 300001}) {
    shape s = fused_layouts<T>(3, cols)[1];
    s.guard = 0;
    check_fused_forward<T>(s, cases[1], seed_of(cols, 70));
    check_fused_forward<T>(s, cases[2], seed_of(cols, 71));
    check_fused_backward<T>(s, cases[1], seed_of(cols, 72));
    check_fused_backward<T>(s, cases[2], seed_of(cols, 73));
    // Masked: loads that stop at each row's kept end.
    check_fused_forward<T>(s, masked_cases()[4], seed_of(cols, 74));
    check_fused_backward<T>(s, masked_cases()[5], seed_of(cols, 75));
    // Boolean masks: the mask's bytes read with the rows' windows, at an odd address.
    check_fused_forward<T>(s, bool_mask_cases()[2], seed_of(cols, 76));
    check_fused_backward<T>(s, bool_mask_cases()[1], seed_of(cols, 77));
    // Biases: of type T a row, and float at an odd element with the masks.
    check_fused_forward<T>(s, bias_cases()[0], seed_of(cols, 78));
    check_fused_forward<T>(s, bias_cases()[2], seed_of(cols, 79));
  }
}

// Staged split rows whose kept ends change from row to row (a length a row: short, long, none,
// past the columns): a group's CTAs take its rows in turn, so the slots a CTA fills with -inf for
// one row held the last row's elements, and a slot filled by one thread and folded by another
// read them (racecheck sees it; a plain run only now and then). Forced plans of one and two
// groups of two and three CTAs, aligned and shifted rows; in compute-sanitizer's subset.
TYPED_TEST_P(Fused, StagedSplitRowsWhoseSharesChange) {
  using T = TypeParam;
  constexpr int v = 16 / static_cast<int>(sizeof(T));
  const int config = detail::configs::staged_split;
  if (!detail::has_kernel(config, direction::forward, v, sizeof(T)))
    GTEST_SKIP() << "staged rows are 16-bit forward rows";
  constexpr std::int64_t cols = 20000;
  for (std::size_t l : {0, 1}) {
    const shape s = fused_layouts<T>(7, cols)[l];
    const row_layout layout{v, s.in_offset % v != 0 || s.ins() % v != 0, false, true};
    const std::int64_t windows = detail::row_windows(detail::kernel_configs[config], layout, cols);
    for (std::int64_t groups : {1, 2})
      for (std::int64_t ctas : {2, 3}) {
        fused_launcher<T> forced;
        forced.forced = detail::with_groups(
            detail::make_plan(config, layout, s.rows, windows, sizeof(T)), groups, ctas);
        ASSERT_TRUE(detail::plan_holds(*forced.forced)) << to_string(*forced.forced);
        SCOPED_TRACE(to_string(*forced.forced));
        for (std::int64_t i : {0, 1})
          for (std::int64_t draw = 0; draw < 3; ++draw)
            check_fused_forward<T>(s, masked_cases()[static_cast<std::size_t>(i)],
                                   seed_of(groups * 8 + ctas, l * 8 + i, 90 + draw), fill::random,
                                   forced);
      }
  }
}

// Other output types: y of Out from x of T (bf16/fp16 -> fp32, fp32 -> bf16), dx of T from dy and
// y of Out, with softmax_options' features, through every tier; the FusedOut suite's parameter
// is io<T, Out>.
template <class T, class Out>
struct io {
  using in = T;
  using out = Out;
};

template <class IO>
class FusedOut : public ::testing::Test {
 protected:
  void SetUp() override { ROWSOFTMAX_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE_P(FusedOut);

TYPED_TEST_P(FusedOut, EveryTierPlanned) {
  every_tier_planned<typename TypeParam::in, typename TypeParam::out>(fused_cases(), 4000);
}
TYPED_TEST_P(FusedOut, SpecialValuesAndEmptyRows) {
  special_values<typename TypeParam::in, typename TypeParam::out>(fused_cases());
}
TYPED_TEST_P(FusedOut, EveryConfigurationThatHoldsTheRow) {
  every_configuration<typename TypeParam::in, typename TypeParam::out>(fused_cases());
}

// In place with another output type is refused (the output would overwrite input elements of
// another size before they are read), and so is an output that overlaps the input: nothing
// written, and explain says why.
TYPED_TEST_P(FusedOut, InPlaceRefused) {
  using T = typename TypeParam::in;
  using Out = typename TypeParam::out;
  constexpr std::int64_t rows = 3, cols = 100;
  constexpr std::size_t bytes = rows * cols * sizeof(float) + 64;
  device_buffer<unsigned char> buf(bytes);
  const std::vector<unsigned char> poisoned(bytes, 0xFF);
  ROWSOFTMAX_CUDA_OK(buf.upload(poisoned));
  T* x = reinterpret_cast<T*>(buf.ptr);
  Out* same = reinterpret_cast<Out*>(buf.ptr);
  Out* inside = reinterpret_cast<Out*>(buf.ptr + 16);
  const softmax_options o{};
  for (Out* y : {same, inside}) {
    EXPECT_EQ(softmax_forward(x, cols, y, cols, rows, cols, o), cudaErrorInvalidValue);
    EXPECT_EQ(log_softmax_backward(y, cols, y + rows * cols, cols, x, cols, rows, cols, o),
              cudaErrorInvalidValue);
    const char* why = explain_forward(x, cols, y, cols, rows, cols, o);
    ASSERT_NE(why, nullptr);
    if (y == same) EXPECT_NE(std::string(why).find("element types differ"), std::string::npos);
  }
  ROWSOFTMAX_CUDA_OK(cudaDeviceSynchronize());
  std::vector<unsigned char> after;
  ROWSOFTMAX_CUDA_OK(buf.download(after));
  EXPECT_EQ(after, poisoned);
}

// compute-sanitizer's subset of the other output types: a short row, a cluster row, a staged or
// split row with the workspace in the output, both directions, tensors that end where their
// allocations do.
TYPED_TEST_P(FusedOut, SanitizerSubset) {
  using T = typename TypeParam::in;
  using Out = typename TypeParam::out;
  const auto cases = fused_cases();
  for (std::int64_t cols : {33, 20000, 300001}) {
    shape s = fused_layouts<T>(3, cols)[1];
    s.guard = 0;
    check_fused_forward<T, Out>(s, cases[1], seed_of(cols, 80));
    check_fused_forward<T, Out>(s, cases[2], seed_of(cols, 81));
    check_fused_backward<T, Out>(s, cases[1], seed_of(cols, 82));
    check_fused_backward<T, Out>(s, cases[2], seed_of(cols, 83));
  }
}

REGISTER_TYPED_TEST_SUITE_P(FusedOut, EveryTierPlanned, SpecialValuesAndEmptyRows,
                            EveryConfigurationThatHoldsTheRow, InPlaceRefused, SanitizerSubset);

REGISTER_TYPED_TEST_SUITE_P(Fused, EveryTierPlanned, MaskedEveryTierPlanned,
                            BoolMaskEveryTierPlanned, SpecialValuesAndEmptyRows,
                            MaskedSpecialValues, BoolMaskSpecialValues,
                            EveryConfigurationThatHoldsTheRow, MaskedEveryConfiguration,
                            BoolMaskEveryConfiguration, BiasEveryTierPlanned, BiasSpecialValues,
                            BiasEveryConfiguration, GraphReadsRowScalesWhenItRuns,
                            GraphReadsLengthsWhenItRuns, RefusedOptionsWriteNothing,
                            RefusedMasksWriteNothing, SanitizerSubset,
                            StagedSplitRowsWhoseSharesChange);

}  // namespace rowsoftmax::test
