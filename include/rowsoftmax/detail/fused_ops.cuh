// SPDX-License-Identifier: Apache-2.0
// The fused ops: softmax and log-softmax with a scale (a call's and a row's), a row
// log-sum-exp output and an empty-row policy, forward and backward, written against the same
// interface as ops.cuh, so that every tier runs them. Log-softmax is a compile-time feature (it
// changes the epilogue and what the fp32 fragment keeps), and so are the prefix masks (lengths,
// causal: they narrow the windows the loads read); the rest are runtime values, read by the
// kernel.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../options.hpp"
#include "ops.cuh"

namespace rowsoftmax::detail {

/// A fused call's runtime options as the kernels read them (softmax_options, checked).
struct fused_params {
  float scale;
  float const* row_scale;  // nullptr: none
  float* row_lse;          // nullptr: not written
  bool zero_empty;         // empty_rows::zero

  static fused_params of(softmax_options const& o) {
    return {o.scale, o.row_scale, o.row_lse, o.empty == empty_rows::zero};
  }
};

/// The masks that keep a prefix of each row (masked_softmax_options), as the kernels read them.
struct prefix_mask {
  int const* lengths;  // nullptr: none
  std::int64_t batch_stride;
  std::int64_t head_stride;
  std::int64_t query_stride;
  std::int64_t heads;
  std::int64_t queries;
  std::int64_t diagonal;    // clamped to [-queries, cols]: the same masks, no overflow
  fast_divider by_queries;  // where `narrow`: the divisions of a row index, in 32 bits
  fast_divider by_heads;
  bool narrow;  // every row index fits 32 bits
  bool causal;

  static prefix_mask of(masked_softmax_options const& o, std::int64_t rows, std::int64_t cols) {
    const std::int64_t d = o.diagonal > cols         ? cols
                           : o.diagonal < -o.queries ? -o.queries
                                                     : o.diagonal;
    // Checked after the call is made (check_masks): `of` must not divide by a bad layout.
    const auto fits = [](std::int64_t v) { return v >= 1 && v <= std::int64_t{0xffffffff}; };
    const bool narrow = rows <= std::int64_t{1} << 32 && fits(o.queries) && fits(o.heads);
    return {o.lengths,
            o.lengths_strides.batch,
            o.lengths_strides.head,
            o.lengths_strides.query,
            o.heads,
            o.queries,
            d,
            fast_divider(narrow ? static_cast<unsigned>(o.queries) : 1u),
            fast_divider(narrow ? static_cast<unsigned>(o.heads) : 1u),
            narrow,
            o.causal};
  }
};

/// The columns [0, kept) of row `row` (of the launch) that its prefix masks keep, of `cols`.
/// The row is (batch, head, query) = (row / (heads * queries), row / queries % heads,
/// row % queries).
__device__ inline std::int64_t kept_cols(prefix_mask const& m, std::int64_t row,
                                         std::int64_t cols) {
  std::int64_t q, h = 0, b = 0;
  if (m.narrow) {
    const auto r = static_cast<unsigned>(row);
    const unsigned bh = m.by_queries.divide(r);
    q = r - bh * m.by_queries.d;
    if (m.lengths != nullptr) {
      const unsigned bi = m.by_heads.divide(bh);
      h = bh - bi * m.by_heads.d;
      b = bi;
    }
  } else {
    q = row % m.queries;
    h = row / m.queries % m.heads;
    b = row / m.queries / m.heads;
  }
  std::int64_t keep = cols;
  if (m.causal) keep = min(keep, max(q + m.diagonal + 1, std::int64_t{0}));
  if (m.lengths != nullptr) {
    const int length = m.lengths[b * m.batch_stride + h * m.head_stride + q * m.query_stride];
    keep = min(keep, std::int64_t{max(length, 0)});
  }
  return keep;
}

/// A boolean mask (bool_masked_softmax_options), as the kernels read it.
struct element_mask {
  unsigned char const* keep;  // nullptr: none
  std::int64_t batch_stride;
  std::int64_t head_stride;
  std::int64_t query_stride;

  static element_mask of(bool_masked_softmax_options const& o) {
    return {reinterpret_cast<unsigned char const*>(o.keep), o.keep_strides.batch,
            o.keep_strides.head, o.keep_strides.query};
  }
};

/// Where row `row`'s mask bytes start (nullptr: no mask); (batch, head, query) as kept_cols
/// reads them.
__device__ inline unsigned char const* keep_row(prefix_mask const& m, element_mask const& k,
                                                std::int64_t row) {
  if (k.keep == nullptr) return nullptr;
  std::int64_t q, h, b;
  if (m.narrow) {
    const auto r = static_cast<unsigned>(row);
    const unsigned bh = m.by_queries.divide(r);
    q = r - bh * m.by_queries.d;
    const unsigned bi = m.by_heads.divide(bh);
    h = bh - bi * m.by_heads.d;
    b = bi;
  } else {
    q = row % m.queries;
    h = row / m.queries % m.heads;
    b = row / m.queries / m.heads;
  }
  return k.keep + (b * k.batch_stride + h * k.head_stride + q * k.query_stride);
}

/// The mask bytes of the window of V elements at element `e0` of a row whose bytes start at
/// `keep`, lane l in byte l; lanes outside `in` read as kept (1) and touch no memory. One load
/// where the window lies in `in` whole and its bytes are V-aligned, else byte by byte.
template <int V>
__device__ inline std::uint64_t keep_bytes(unsigned char const* keep, std::int64_t e0, lanes in) {
  unsigned char const* p = keep + e0;
  if (in.lo == 0 && in.hi == V && reinterpret_cast<std::uintptr_t>(p) % V == 0) {
    if constexpr (V == 8) {
      return *reinterpret_cast<std::uint64_t const*>(p);
    } else if constexpr (V == 4) {
      return *reinterpret_cast<std::uint32_t const*>(p);
    } else if constexpr (V == 2) {
      return *reinterpret_cast<std::uint16_t const*>(p);
    } else {
      return *p;
    }
  }
  std::uint64_t b = 0;
#pragma unroll
  for (int l = 0; l < V; ++l)
    b |= std::uint64_t{l >= in.lo && l < in.hi ? p[l] : static_cast<unsigned char>(1)} << (8 * l);
  return b;
}

/// Whether lane l of `bytes` (keep_bytes) keeps its element.
__device__ inline bool keeps_lane(std::uint64_t bytes, int l) {
  return ((bytes >> (8 * l)) & 0xffu) != 0;
}

/// The mask bytes of window `e0` of a row (keep_bytes) for its lanes before `end` (the row's kept
/// end: the others read as kept, their bytes unread); all kept where there is no mask.
template <int V>
__device__ inline std::uint64_t window_keep(unsigned char const* keep, std::int64_t e0,
                                            std::int64_t end) {
  const lanes in = lanes_in_row<V>(e0, end);
  if (keep == nullptr || in.lo >= in.hi) return ~std::uint64_t{0};
  return keep_bytes<V>(keep, e0, in);
}

/// `fill` in the elements of window `v` whose mask byte (of `bytes`, window_keep) is 0.
template <class T, int V>
__device__ inline void apply_keep(std::uint64_t bytes, T fill, vec_t<T, V>& v) {
  using vec = vec_t<T, V>;
  using word = typename vec::word;
  const word f = vec::fill_word(fill);
#pragma unroll
  for (int i = 0; i < vec::words; ++i) {
    word m = 0;
#pragma unroll
    for (int h = 0; h < vec::per_word; ++h)
      if (!keeps_lane(bytes, i * vec::per_word + h))
        m |= vec::per_word == 1 ? static_cast<word>(~word{0})
                                : static_cast<word>(0xffffu << (16 * h));
    v.w[i] = (v.w[i] & static_cast<word>(~m)) | (f & m);
  }
}

/// `fill` in the elements of window `v` (at element `e0` of its row) whose mask byte is 0, of
/// those before `end` (the row's kept end: the others are left as they are, their bytes unread).
template <class T, int V>
__device__ inline void keep_window(unsigned char const* keep, std::int64_t e0, std::int64_t end,
                                   T fill, vec_t<T, V>& v) {
  const lanes in = lanes_in_row<V>(e0, end);
  if (keep == nullptr || in.lo >= in.hi) return;
  apply_keep(keep_bytes<V>(keep, e0, in), fill, v);
}

/// A thread's mask bytes of its N windows of a row (window_keep; load_windows' geometry, `Hint`
/// as there). The ops read them before the first instruction that uses a loaded value (a ragged
/// window's, fill_past's): after it, that instruction holds the warp's mask loads back by a
/// memory latency.
template <class Hint, int V, int N>
__device__ inline void fetch_keep(unsigned char const* keep, row_window const& w, std::int64_t end,
                                  std::uint64_t (&bytes)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) bytes[k] = window_keep<V>(keep, first_element<V, Hint>(w, k), end);
}

/// apply_keep over a thread's N windows.
template <class T, int V, int N>
__device__ inline void apply_keeps(std::uint64_t const (&bytes)[N], T fill, vec_t<T, V> (&v)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) apply_keep(bytes[k], fill, v[k]);
}

/// An additive bias (biased_softmax_options), as the kernels read it.
struct bias_operand {
  void const* bias;  // nullptr: none
  std::int64_t batch_stride;
  std::int64_t head_stride;
  std::int64_t query_stride;
  bool f32;  // float elements, else the launch's element type

  static bias_operand of(biased_softmax_options const& o) {
    return {o.bias, o.bias_strides.batch, o.bias_strides.head, o.bias_strides.query,
            o.bias_dtype == bias_type::f32};
  }
};

/// Where row `row`'s bias starts (nullptr: no bias), element type T's or float's by `b.f32`;
/// (batch, head, query) as kept_cols reads them.
template <class T>
__device__ inline void const* bias_row(prefix_mask const& m, bias_operand const& b,
                                       std::int64_t row) {
  if (b.bias == nullptr) return nullptr;
  std::int64_t q, h, n;
  if (m.narrow) {
    const auto r = static_cast<unsigned>(row);
    const unsigned bh = m.by_queries.divide(r);
    q = r - bh * m.by_queries.d;
    const unsigned bi = m.by_heads.divide(bh);
    h = bh - bi * m.by_heads.d;
    n = bi;
  } else {
    q = row % m.queries;
    h = row / m.queries % m.heads;
    n = row / m.queries / m.heads;
  }
  const std::int64_t at = n * b.batch_stride + h * b.head_stride + q * b.query_stride;
  return b.f32 ? static_cast<void const*>(static_cast<float const*>(b.bias) + at)
               : static_cast<void const*>(static_cast<T const*>(b.bias) + at);
}

/// A row's bias as the kernels read it: where it starts (bias_row) and its element type.
struct bias_ref {
  void const* row;  // nullptr: no bias
  bool f32;
};

/// The bias of the window of V elements at element `e0` of a row (`r`), as floats, for its lanes
/// before `end` (the row's kept end); 0 in the others, which touch no memory. Whole windows
/// aligned to their bytes in vector loads, others element by element.
template <class T, int V>
__device__ inline void bias_window(bias_ref r, std::int64_t e0, std::int64_t end, float (&b)[V]) {
#pragma unroll
  for (int l = 0; l < V; ++l) b[l] = 0.0f;
  const lanes in = lanes_in_row<V>(e0, end);
  if (r.row == nullptr || in.lo >= in.hi) return;
  const bool whole = in.lo == 0 && in.hi == V;
  if (r.f32) {
    float const* p = static_cast<float const*>(r.row) + e0;
    if constexpr (V % 4 == 0) {
      if (whole && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
#pragma unroll
        for (int q = 0; q < V / 4; ++q) {
          const float4 f = reinterpret_cast<float4 const*>(p)[q];
          b[4 * q] = f.x;
          b[4 * q + 1] = f.y;
          b[4 * q + 2] = f.z;
          b[4 * q + 3] = f.w;
        }
        return;
      }
    }
#pragma unroll
    for (int l = 0; l < V; ++l)
      if (l >= in.lo && l < in.hi) b[l] = p[l];
  } else {
    T const* p = static_cast<T const*>(r.row) + e0;
    using vec = vec_t<T, V>;
    if (whole && reinterpret_cast<std::uintptr_t>(p) % sizeof(vec) == 0) {
      const vec v = vec::load(p, no_hint{});
#pragma unroll
      for (int l = 0; l < V; ++l) b[l] = v.at(l);
      return;
    }
#pragma unroll
    for (int l = 0; l < V; ++l)
      if (l >= in.lo && l < in.hi) b[l] = to_float(p[l]);
  }
}

/// Windows whose bias a biased op with fp32 slots reads at once, of a thread's N: all their loads
/// issued before any is used, so that a thread waits a memory latency a group, not a window, and
/// holds a group's bias in registers, not a fragment's. 16-bit ops read a window's at a time:
/// four windows' spilled them (tuning log, additive bias).
template <class T, int N>
inline constexpr int bias_group = std::is_same_v<T, float> ? (N < 4 ? N : 4) : 1;

/// The bias (bias_window) of a thread's windows [k0, k0 + G) of a row (its window `w`, `Hint`
/// as first_element's), of its N; those past the N-th not read.
template <class T, int V, int G, int N, class Hint>
__device__ inline void bias_windows(bias_ref r, row_window const& w, int k0, std::int64_t end,
                                    float (&b)[G][V]) {
#pragma unroll
  for (int g = 0; g < G; ++g)
    if (k0 + g < N) bias_window<T, V>(r, first_element<V, Hint>(w, k0 + g), end, b[g]);
}

/// The biased logit of a scaled element `p` (s * x, rounded) and its bias `b`: p + b rounded,
/// but -inf stays -inf whatever the bias (a masked element stays masked). Rounded on its own
/// (add_rn), so that the loads and the store of a 16-bit row, which compute it apart, agree.
__device__ inline float biased(float p, float b) {
  return p == neg_inf ? neg_inf : add_rn(p, b);
}

/// Folds V logits into a running (max, sum of exp(z - max)): the window's max first, then its
/// exps against the new max, the running sum rescaled (one exp more a window than a row's max
/// known before).
template <int V>
__device__ inline void fold_logits(float const (&z)[V], float& m, float& s) {
  float w = neg_inf;
#pragma unroll
  for (int l = 0; l < V; ++l) w = fmaxf(w, z[l]);
  const float nm = fmaxf(m, w), shift = safe_shift(nm);
  float sum = 0.0f;
#pragma unroll
  for (int l = 0; l < V; ++l) sum += exp_diff(z[l], shift);
  s = s * exp_diff(m, shift) + sum;
  m = nm;
}

/// What a fused op's `loaded` returns: a narrowed copy of the window where Masked, else the
/// window itself (a copy there changes the unmasked kernels' code and registers).
template <bool Masked>
using masked_window = std::conditional_t<Masked, row_window, row_window const&>;

/// The part of row window `w` a fused op's loads read, for its arguments `a`: up to the row's
/// kept columns where Masked (a narrowed copy), else the window itself.
template <bool Masked, class Args>
__device__ inline masked_window<Masked> loaded_part(Args const& a, row_window const& w) {
  if constexpr (Masked) {
    row_window k = w;
    k.cols = min(w.cols, kept_cols(a.mask, a.row_base + w.row, a.cols));
    return k;
  } else {
    return w;
  }
}

/// A masked op's arguments: its unmasked arguments and the masks. Apart, so that an unmasked
/// op's arguments are what they were before the masks (a larger kernel parameter changes how
/// nvcc keeps it: the fp32 cluster kernels spilled 16-124 bytes more).
template <class Base>
struct masked_args : Base {
  prefix_mask mask;
};
/// A boolean-masked op's arguments: the masked ones and the mask.
template <class Base>
struct keep_args : masked_args<Base> {
  element_mask keep;
};
/// A biased op's arguments: the boolean-masked ones and the bias.
template <class Base>
struct bias_args : keep_args<Base> {
  bias_operand bias;
};
template <bool Masked, class Base, bool Keep = false, bool Bias = false>
using args_with_masks = std::conditional_t<
    Bias, bias_args<Base>,
    std::conditional_t<Keep, keep_args<Base>, std::conditional_t<Masked, masked_args<Base>, Base>>>;

/// Where the mask bytes of row `w` of a boolean-masked op's arguments `a` start (nullptr: none).
template <class Args>
__device__ inline unsigned char const* keep_row_of(Args const& a, row_window const& w) {
  return keep_row(a.mask, a.keep, a.row_base + w.row);
}

/// Row `w`'s bias of a biased op's arguments `a` (element type T's or float's).
template <class T, class Args>
__device__ inline bias_ref bias_row_of(Args const& a, row_window const& w) {
  return {bias_row<T>(a.mask, a.bias, a.row_base + w.row), a.bias.f32};
}

/// The logit of an element x under the row's scale s: s * x rounded to float, but -inf stays
/// -inf whatever the scale (a masked element stays masked, and the -inf the loads put beyond a
/// row stays outside it under a negative or zero scale). Every product s * x of the fused ops is
/// mul_rn: contracted into the subtraction of the row's max (an fma), the product would not be
/// rounded where the max's is, and z - M of the max element would be its rounding error, not 0:
/// exp of it overflows for logits near the float range, and log-softmax is off by it.
__device__ inline float logit(float s, float x) {
  return x == neg_inf ? neg_inf : mul_rn(s, x);
}

/// exp(k * x - shift) for an exp functor `E` of exp(x - shift) (shifted_exp or fused_exp);
/// `Masked`: exp(logit(k, x) - shift), for slots not made ready by prepare_slots.
template <class E, bool Masked = false>
struct scaled_exp {
  E e;
  float k;
  float scale;
  __device__ scaled_exp(E const& exp, float factor) : e(exp), k(factor), scale(exp.scale) {}
  __device__ float operator()(float x) const { return e(Masked ? logit(k, x) : mul_rn(k, x)); }
};

/// 16-bit slots of x made ready, once a load, for the plain product: the scale returned, `s`
/// times each slot being the element's logit. Where s > 0 (or NaN, which makes the row NaN either
/// way) nothing changes; where s < 0, -inf becomes +inf (s * +inf = -inf); where s = 0, finite
/// elements become 0, infinite ones and NaN NaN, -inf stays, and the scale 1. So the fold and
/// the store multiply without logit's select an element, which spills the 16-bit register tiers
/// at their bound.
template <class T, int V, int N>
__device__ inline float prepare_slots(vec_t<T, V> (&v)[N], float s) {
  if (!(s <= 0.0f)) return s;
  const bool zero = s == 0.0f;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    float y[V];
#pragma unroll
    for (int l = 0; l < V; ++l) {
      const float x = v[k].at(l);
      y[l] = x == neg_inf ? (zero ? neg_inf : -neg_inf) : zero ? x - x : x;
    }
    v[k] = vec_t<T, V>::round(y);  // exact: each value is x, 0, an infinity or NaN
  }
  return zero ? 1.0f : s;
}

/// The max of s * x over prepared slots (prepare_slots): s times their max, or their min where
/// s < 0 (rounding is monotonic), compared packed.
template <class T, int V>
__device__ inline float prepared_max(vec_t<T, V> const& v, float s) {
  return s < 0.0f ? mul_rn(s, v.min()) : mul_rn(s, v.max());
}

/// Stores `v` at `p` in global memory, said so: in the tiled kernel, whose rows are written to
/// shared memory, nvcc 13.0 otherwise takes the row LSE's generic pointer for a shared one.
__device__ inline void store_global(float* p, float v) {
  asm volatile("st.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

/// The scale of row `row` (a row of the launch: tiled rows add their tile's first).
__device__ inline float row_scale_of(fused_params const& p, std::int64_t row) {
  return p.row_scale != nullptr ? p.scale * p.row_scale[row] : p.scale;
}

/// The max of the logits of the elements of `v`: s times their max where s > 0 (rounding is
/// monotonic, and -inf stays -inf), element by element otherwise (-inf is no min there).
template <class T, int V>
__device__ inline float scaled_max(vec_t<T, V> const& v, float s) {
  if (s > 0.0f) return mul_rn(s, v.max());
  float m = neg_inf;
#pragma unroll
  for (int l = 0; l < V; ++l) m = fmaxf(m, logit(s, v.at(l)));
  return m;
}

/// y = softmax(s * x) or, `Log`, log_softmax(s * x) along each row (softmax_options); `Masked`:
/// of the columns the row's prefix masks keep (masked_softmax_options), the others read as -inf
/// and not loaded; `Keep` (with Masked): of those, the ones whose boolean mask byte is not 0
/// (bool_masked_softmax_options), the others -inf once loaded. As forward_op, but: fp32 slots
/// hold the scaled logits (and, softmax, their exps after fold); 16-bit slots stay packed x,
/// scaled where converted; log-softmax keeps logits, not exps, and its store takes no exp.
/// `Bias` (with Keep): plus the additive bias (biased_softmax_options): fp32 slots hold the
/// biased logits; 16-bit slots stay x, the loads fold their biased logits (fold_logits) and the
/// store reads the bias again. `Out`: y's element type, T's or, where T is 16-bit, float (and
/// the reverse): the store rounds to it, nothing else changes.
template <class T, bool Log, bool Masked = false, bool Keep = false, bool Bias = false,
          class Out = T>
struct fused_forward_op {
  static_assert(Masked || !Keep, "a boolean mask comes with the prefix masks' arguments");
  static_assert(Keep || !Bias, "a bias comes with the boolean mask's arguments");
  using value_type = T;
  using output_type = Out;
  using reduce = online_reduce;
  using plain = forward_op<T>;
  static constexpr direction dir = direction::forward;
  static constexpr int inputs = 1;
  static constexpr int outputs = 1;
  static constexpr bool keeps_exp = std::is_same_v<T, float> && !Log;

  struct base_args {
    T const* x;
    std::int64_t x_stride;
    Out* y;
    std::int64_t y_stride;
    std::int64_t rows;
    std::int64_t cols;
    fused_params p;
    std::int64_t row_base;  // the launch's row of row 0 (tiled rows: the tile's first)
  };
  using args = args_with_masks<Masked, base_args, Keep, Bias>;
  static constexpr bool sums_at_load = Bias && !std::is_same_v<T, float>;

  /// A thread's slots of a row. fp32: s * x (softmax: exp(s * x - m) after fold); 16-bit: x, and
  /// the row's scale beside them (fp32 ones keep none: a register more spills the fp32 split
  /// kernel at its bound); 16-bit biased: and the sum of exp(z - m) the loads fold.
  template <int V, int N, bool KeepsScale = !std::is_same_v<T, float>, bool Sums = sums_at_load>
  struct fragment {
    vec_t<T, V> v[N];
    float m;  // max of s * x over the thread's slots (-inf if none), set by load
    float s;  // the row's scale, set by load
  };
  template <int V, int N>
  struct fragment<V, N, false, false> {
    vec_t<T, V> v[N];
    float m;
  };
  template <int V, int N>
  struct fragment<V, N, true, true> {
    vec_t<T, V> v[N];
    float m;    // max of the biased logits over the thread's slots
    float s;    // the row's scale
    float sum;  // sum of exp(z - m) over the thread's slots
  };

  /// The plain op's args of the same tensors (the rows' geometry goes through it; y only where
  /// it is of T).
  __device__ static typename plain::args tensors(args const& a) {
    if constexpr (std::is_same_v<Out, T>) {
      return {a.x, a.x_stride, a.y, a.y_stride, a.rows, a.cols};
    } else {
      return {a.x, a.x_stride, nullptr, a.y_stride, a.rows, a.cols};
    }
  }

  template <int V>
  __device__ static row_window window(args const& a, std::int64_t row, std::int64_t first,
                                      int stride) {
    return plain::template window<V>(tensors(a), row, first, stride);
  }
  __device__ static T const* input(args const& a, int) { return a.x; }
  __host__ __device__ static Out* output(args const& a) { return a.y; }
  __device__ static T const* input_row(args const& a, int t, std::int64_t row) {
    return plain::input_row(tensors(a), t, row);
  }
  __device__ static Out* output_row(args const& a, std::int64_t row) {
    return a.y + row * a.y_stride;
  }
  __device__ static args on_tiles(args const& a, T* const (&tiles)[inputs], std::int64_t rows,
                                  std::int64_t first_row) {
    // Unmasked, the aggregate as before the masks (through a helper, nvcc's code for the tiled
    // kernels moved).
    if constexpr (Bias) {
      return {{{base_args{tiles[0], a.cols, tiles[0], a.cols, rows, a.cols, a.p,
                          a.row_base + first_row},
                a.mask},
               a.keep},
              a.bias};
    } else if constexpr (Keep) {
      return {
          {base_args{tiles[0], a.cols, tiles[0], a.cols, rows, a.cols, a.p, a.row_base + first_row},
           a.mask},
          a.keep};
    } else if constexpr (Masked) {
      return {
          base_args{tiles[0], a.cols, tiles[0], a.cols, rows, a.cols, a.p, a.row_base + first_row},
          a.mask};
    } else {
      return {tiles[0], a.cols, tiles[0], a.cols, rows, a.cols, a.p, a.row_base + first_row};
    }
  }

  /// The part of `w` the loads read: where Masked, up to the row's kept columns (-inf beyond).
  __device__ static masked_window<Masked> loaded(args const& a, row_window const& w) {
    return loaded_part<Masked>(a, w);
  }

  /// Masked: a tile's windows narrowed to the kept columns (load_tile_windows selects the fill
  /// a word); global memory's read up to the kept end (read_limit), then fill_past.
  template <int V, int N, class Hint = no_hint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               Hint hint = {}) {
    const T fill = from_float<T>(neg_inf);
    if constexpr (Masked && std::is_same_v<Hint, in_tile>) {
      load_windows(a.x + w.row * a.x_stride, loaded(a, w), fill, f.v, hint);
    } else if constexpr (Masked) {
      load_windows(a.x + w.row * a.x_stride, w, fill, f.v, hint, read_limit{loaded(a, w).cols});
    } else {
      load_windows(a.x + w.row * a.x_stride, w, fill, f.v, hint);
    }
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void finish(args const& a, row_window const& w, fragment<V, N>& f,
                                Hint hint = {}) {
    const T fill = from_float<T>(neg_inf);
    [[maybe_unused]] std::uint64_t kb[Keep ? N : 1];  // Keep: the windows' mask bytes
    if constexpr (Keep) fetch_keep<Hint, V>(keep_row_of(a, w), w, loaded(a, w).cols, kb);
    if constexpr (Masked && std::is_same_v<Hint, in_tile>) {
      finish_windows(a.x + w.row * a.x_stride, loaded(a, w), fill, f.v, hint);
      if constexpr (Keep) apply_keeps(kb, fill, f.v);
    } else if constexpr (Masked) {
      const std::int64_t end = loaded(a, w).cols;
      finish_windows(a.x + w.row * a.x_stride, w, fill, f.v, hint, read_limit{end});
      fill_past<Hint>(w, end, fill, f.v);
      if constexpr (Keep) apply_keeps(kb, fill, f.v);
    } else {
      finish_windows(a.x + w.row * a.x_stride, w, fill, f.v, hint);
    }
    const float s = row_scale_of(a.p, a.row_base + w.row);
    f.m = neg_inf;
    if constexpr (Bias) {
      const bias_ref br = bias_row_of<T>(a, w);
      const std::int64_t end = loaded(a, w).cols;
      constexpr int G = bias_group<T, N>;
      if constexpr (!std::is_same_v<T, float>) {
        f.s = prepare_slots(f.v, s);
        f.sum = 0.0f;
      }
#pragma unroll
      for (int k0 = 0; k0 < N; k0 += G) {
        float b[G][V];
        bias_windows<T, V, G, N, Hint>(br, w, k0, end, b);
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const int k = k0 + g;
          if (k >= N) continue;
          if constexpr (std::is_same_v<T, float>) {
#pragma unroll
            for (int l = 0; l < V; ++l)
              f.v[k].w[l] = bits_as<std::uint32_t>(biased(logit(s, f.v[k].at(l)), b[g][l]));
            f.m = fmaxf(f.m, f.v[k].max());
          } else {
            float z[V];
#pragma unroll
            for (int l = 0; l < V; ++l) z[l] = biased(mul_rn(f.s, f.v[k].at(l)), b[g][l]);
            fold_logits(z, f.m, f.sum);
          }
        }
      }
    } else if constexpr (std::is_same_v<T, float>) {
#pragma unroll
      for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int l = 0; l < V; ++l) {
          const float x = f.v[k].at(l);
          f.v[k].w[l] =
              bits_as<std::uint32_t>(keeps_exp ? (x == neg_inf ? neg_inf : s * x) : logit(s, x));
        }
        // Softmax: the products rounded into the slots and hidden from the optimizer, so that
        // none is contracted into a later subtraction (what mul_rn guarantees, see logit): the
        // 288-byte cluster then spills 20 bytes, not mul_rn's 136. Log-softmax so hidden spills
        // 32 bytes in a second cluster configuration; it keeps mul_rn.
        if constexpr (keeps_exp) f.v[k].opaque();
        f.m = fmaxf(f.m, f.v[k].max());
      }
    } else {
      f.s = prepare_slots(f.v, s);
#pragma unroll
      for (int k = 0; k < N; ++k) f.m = fmaxf(f.m, prepared_max(f.v[k], f.s));
    }
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f,
                              Hint hint = {}) {
    issue(a, w, f, hint);
    finish(a, w, f, hint);
  }

  template <int V, int N>
  __device__ static partial fold(fragment<V, N>& f) {
    const shifted_exp e{safe_shift(f.m)};
    if constexpr (sums_at_load) {
      return {f.m, f.sum};
    } else if constexpr (std::is_same_v<T, float>) {
      return {f.m, plain::template exp_sum<keeps_exp>(f.v, e)};
    } else {
      return {f.m, plain::template exp_sum<false>(f.v, scaled_exp(e, f.s))};
    }
  }

  /// What the store needs of the row's total, made once a row.
  struct row_out {
    float shift;    // safe_shift(M)
    float inv;      // 1 / S (0 for an empty row under empty_rows::zero)
    float log_sum;  // ln S (+inf for an empty row under empty_rows::zero), as lg2.approx * ln 2
  };
  __device__ static row_out out_of(fused_params const& p, partial total) {
    const bool zero = p.zero_empty && total.s == 0.0f;
    row_out o{safe_shift(total.m), 0.0f, 0.0f};
    if constexpr (Log) {
      o.log_sum = zero ? -neg_inf : __logf(total.s);
    } else {
      o.inv = zero ? 0.0f : 1.0f / total.s;
    }
    return o;
  }
  /// The row's log-sum-exp into p.row_lse, by the thread whose slot 0 is the row's first window.
  __device__ static void put_lse(fused_params const& p, std::int64_t row, std::int64_t first,
                                 partial total) {
    if (p.row_lse != nullptr && first == 0)
      store_global(p.row_lse + row, total.m + __logf(total.s));
  }

  /// One window's outputs given the row's `o`: `z` gives element l's scaled logit (or, fp32
  /// softmax, its kept exp; see store).
  template <int V, class Z>
  __device__ static vec_t<Out, V> out_window(row_out const& o, Z const& z, float keep_scale) {
    float y[V];
#pragma unroll
    for (int l = 0; l < V; ++l) {
      if constexpr (Log) {
        y[l] = (z(l) - o.shift) - o.log_sum;
      } else if constexpr (keeps_exp) {
        y[l] = z(l) * keep_scale;
      } else {
        y[l] = exp_diff(z(l), o.shift) * o.inv;
      }
    }
    return vec_t<Out, V>::round(y);
  }

  template <bool OneStore = false, int V, int N, class Hint = no_hint>
  __device__ static void store(args const& a, row_window const& w, fragment<V, N> const& f,
                               partial total, Hint hint = {}) {
    const row_out o = out_of(a.p, total);
    // fp32 softmax: the slots hold exp(z - m_thread); y = that * exp(m_thread - M) / S.
    const float keep_scale = keeps_exp ? exp_diff(f.m, o.shift) * o.inv : 0.0f;
    [[maybe_unused]] bias_ref br{};  // 16-bit biased: the row's bias, read again
    [[maybe_unused]] std::int64_t end = 0;
    if constexpr (sums_at_load) {
      br = bias_row_of<T>(a, w);
      end = loaded(a, w).cols;
    }
    // Another output type: each window stored as it is made (store_part).
    constexpr bool each = !std::is_same_v<Out, T>;
    vec_t<Out, V> out[each ? 1 : N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      vec_t<T, V> x = f.v[k];
      x.opaque();  // convert again rather than keep fold's floats alive across the exchange
      [[maybe_unused]] float b[sums_at_load ? V : 1];
      if constexpr (sums_at_load) bias_window<T, V>(br, first_element<V, Hint>(w, k), end, b);
      const auto z = [&](int l) {
        if constexpr (std::is_same_v<T, float>) {
          return x.at(l);
        } else if constexpr (sums_at_load) {
          return biased(mul_rn(f.s, x.at(l)), b[l]);  // as finish made them
        } else {
          return mul_rn(f.s, x.at(l));  // prepared slots (prepare_slots)
        }
      };
      if constexpr (each) {
        store_part(a.y + w.row * a.y_stride, first_element<V, Hint>(w, k), w.cols,
                   out_window<V>(o, z, keep_scale), hint);
      } else {
        out[k] = out_window<V>(o, z, keep_scale);
      }
    }
    if constexpr (!each) store_windows<OneStore>(a.y + w.row * a.y_stride, w, out, hint);
    // After the row's stores: written before them, the LSE's address stays live across the
    // output loop and spills the 16-bit one-CTA kernels.
    if (w.cols > 0) put_lse(a.p, a.row_base + w.row, w.first, total);
  }

  // The staged tiers (staged_share) fold and store windows of x from shared memory through
  // these, with one row_state a row (Keep: with where its mask bytes start, and its kept end).
  struct plain_row_state {
    fused_params p;
    float s;
    std::int64_t row;  // of the launch
  };
  struct keep_row_state {
    fused_params p;
    float s;
    std::int64_t row;
    unsigned char const* keep;
    std::int64_t end;
  };
  struct bias_row_state : keep_row_state {
    bias_ref bias;
  };
  using row_state = std::conditional_t<Bias, bias_row_state,
                                       std::conditional_t<Keep, keep_row_state, plain_row_state>>;
  __device__ static row_state staged_row(args const& a, std::int64_t row) {
    if constexpr (Bias) {
      const row_window w = window<1>(a, row, 0, 1);
      return {{a.p, row_scale_of(a.p, a.row_base + row), a.row_base + row, keep_row_of(a, w),
               loaded(a, w).cols},
              bias_row_of<T>(a, w)};
    } else if constexpr (Keep) {
      const row_window w = window<1>(a, row, 0, 1);
      return {a.p, row_scale_of(a.p, a.row_base + row), a.row_base + row, keep_row_of(a, w),
              loaded(a, w).cols};
    } else {
      return {a.p, row_scale_of(a.p, a.row_base + row), a.row_base + row};
    }
  }
  /// Keep: window x (at element e0 of its row) as the staged tiers fold and store it, -inf in its
  /// masked elements (forward_op::masks_staged).
  static constexpr bool masks_staged = Keep;
  template <int V>
  __device__ static vec_t<T, V> staged_window(vec_t<T, V> x, row_state const& r, std::int64_t e0) {
    if constexpr (Keep) keep_window(r.keep, e0, r.end, from_float<T>(neg_inf), x);
    return x;
  }
  template <int V>
  __device__ static float max_of(vec_t<T, V> const& v, row_state const& r) {
    return scaled_max(v, r.s);
  }
  template <int V, int N, class E>
  __device__ static float exp_sum_of(vec_t<T, V> (&v)[N], E const& e, row_state const& r) {
    return plain::template exp_sum<false>(v, scaled_exp<E, true>(e, r.s));
  }
  /// Window x's outputs given the row's total (`e`: exp(x - shift), `inv`: 1 / S, as the staged
  /// store makes them for plain rows).
  template <int V, class E>
  __device__ static vec_t<Out, V> normalized_of(vec_t<T, V> const& x, E const& e, float inv,
                                                partial total, row_state const& r) {
    if constexpr (Log) {
      return out_window<V>(
          out_of(r.p, total), [&](int l) { return logit(r.s, x.at(l)); }, 0.0f);
    } else {
      const bool zero = r.p.zero_empty && total.s == 0.0f;
      return plain::template normalized<Out>(x, scaled_exp<E, true>(e, r.s), zero ? 0.0f : inv);
    }
  }
  /// Bias: the staged tiers fold and store a window through these instead, given its first
  /// element `e0` (its bias read there; x masked by staged_window before). A window's bias is
  /// read and used before the next one's: reading four windows' first spilled the staged kernels
  /// 2.5-4.4 KB, and reading each before its window's shared-memory read lost 1-5% (tuning
  /// log, additive bias).
  static constexpr bool biases_staged = Bias;
  template <int V>
  __device__ static void biased_logits(vec_t<T, V> const& x, row_state const& r, std::int64_t e0,
                                       float (&z)[V]) {
    float b[V];
    bias_window<T, V>(r.bias, e0, r.end, b);
#pragma unroll
    for (int l = 0; l < V; ++l) z[l] = biased(logit(r.s, x.at(l)), b[l]);
  }
  template <int V>
  __device__ static void fold_at(vec_t<T, V> const& x, row_state const& r, std::int64_t e0,
                                 float& m, float& s) {
    float z[V];
    biased_logits(x, r, e0, z);
    fold_logits(z, m, s);
  }
  template <int V, class E>
  __device__ static vec_t<Out, V> normalized_at(vec_t<T, V> const& x, E const& e, float inv,
                                                partial total, row_state const& r,
                                                std::int64_t e0) {
    float z[V];
    biased_logits(x, r, e0, z);
    if constexpr (Log) {
      return out_window<V>(
          out_of(r.p, total), [&](int l) { return z[l]; }, 0.0f);
    } else {
      const float k = (r.p.zero_empty && total.s == 0.0f ? 0.0f : inv) * e.scale;
      float y[V];
#pragma unroll
      for (int l = 0; l < V; ++l) y[l] = e(z[l]) * k;
      return vec_t<Out, V>::round(y);
    }
  }
  /// The row's log-sum-exp, by the one thread the staged tier asks.
  __device__ static void staged_lse(row_state const& r, partial total) {
    put_lse(r.p, r.row, 0, total);
  }
};

/// The gradient of fused_forward_op with respect to x: softmax dx = s * y * (dy - sum(dy * y)),
/// log-softmax dx = s * (dy - exp(y) * sum(dy)); `Masked`: over the kept columns, dy and y of
/// the others not loaded and their dx 0; `Keep`: the boolean mask's too, their dy and y taken
/// as 0 once loaded. As backward_op; the scale is applied at the store.
/// `Bias`: the backward of a biased forward (biased_softmax_options), which does not read the
/// bias: the Keep op's code, a type of its own so that its kernels are compiled with the biased
/// forward's (instantiate_fused.cuh: one variant, one unit). T is the type of dy and y (the
/// forward's output), `Dx` dx's (the forward's input): the store rounds to it.
template <class T, bool Log, bool Masked = false, bool Keep = false, bool Bias = false,
          class Dx = T>
struct fused_backward_op {
  static_assert(Masked || !Keep, "a boolean mask comes with the prefix masks' arguments");
  static_assert(Keep || !Bias, "a bias comes with the boolean mask's arguments");
  using value_type = T;
  using output_type = Dx;
  using reduce = sum_reduce;
  using plain = backward_op<T>;
  static constexpr direction dir = direction::backward;
  static constexpr int inputs = 2;
  static constexpr int outputs = 1;

  struct base_args {
    T const* dy;
    std::int64_t dy_stride;
    T const* y;
    std::int64_t y_stride;
    Dx* dx;
    std::int64_t dx_stride;
    std::int64_t rows;
    std::int64_t cols;
    fused_params p;
    std::int64_t row_base;
  };
  using args = args_with_masks<Masked, base_args, Keep>;

  template <int V, int N>
  using fragment = typename plain::template fragment<V, N>;

  /// The plain op's args of the same tensors (loads and kept halves go through it; dx only
  /// where it is of T).
  __device__ static typename plain::args tensors(args const& a) {
    if constexpr (std::is_same_v<Dx, T>) {
      return {a.dy, a.dy_stride, a.y, a.y_stride, a.dx, a.dx_stride, a.rows, a.cols};
    } else {
      return {a.dy, a.dy_stride, a.y, a.y_stride, nullptr, a.dx_stride, a.rows, a.cols};
    }
  }

  template <int V>
  __device__ static row_window window(args const& a, std::int64_t row, std::int64_t first,
                                      int stride) {
    return plain::template window<V>(tensors(a), row, first, stride);
  }
  __device__ static T const* input(args const& a, int t) { return t == 0 ? a.dy : a.y; }
  __host__ __device__ static Dx* output(args const& a) { return a.dx; }
  __device__ static T const* input_row(args const& a, int t, std::int64_t row) {
    return t == 0 ? a.dy + row * a.dy_stride : a.y + row * a.y_stride;
  }
  __device__ static Dx* output_row(args const& a, std::int64_t row) {
    return a.dx + row * a.dx_stride;
  }
  __device__ static args on_tiles(args const& a, T* const (&tiles)[inputs], std::int64_t rows,
                                  std::int64_t first_row) {
    if constexpr (Keep) {
      return {{base_args{tiles[0], a.cols, tiles[1], a.cols, tiles[0], a.cols, rows, a.cols, a.p,
                         a.row_base + first_row},
               a.mask},
              a.keep};
    } else if constexpr (Masked) {
      return {base_args{tiles[0], a.cols, tiles[1], a.cols, tiles[0], a.cols, rows, a.cols, a.p,
                        a.row_base + first_row},
              a.mask};
    } else {
      return {tiles[0], a.cols, tiles[1], a.cols, tiles[0],
              a.cols,   rows,   a.cols,   a.p,    a.row_base + first_row};
    }
  }

  /// As fused_forward_op::loaded (dy and y read as 0 beyond the kept columns).
  __device__ static masked_window<Masked> loaded(args const& a, row_window const& w) {
    return loaded_part<Masked>(a, w);
  }

  /// Masked: as fused_forward_op::issue, for dy and y.
  template <int V, int N, class Hint = no_hint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               Hint hint = {}) {
    if constexpr (Masked) {
      issue(a, w, f, hint, hint);
    } else {
      plain::issue(tensors(a), w, f, hint);
    }
  }
  template <int V, int N, class DyHint, class YHint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               DyHint dy_hint, YHint y_hint) {
    if constexpr (Masked && std::is_same_v<DyHint, in_tile>) {
      plain::issue(tensors(a), loaded(a, w), f, dy_hint, y_hint);
    } else if constexpr (Masked) {
      const T zero = from_float<T>(0.0f);
      const read_limit limit{loaded(a, w).cols};
      load_windows(a.dy + w.row * a.dy_stride, w, zero, f.dy, dy_hint, limit);
      load_windows(a.y + w.row * a.y_stride, w, zero, f.y, y_hint, limit);
    } else {
      plain::issue(tensors(a), w, f, dy_hint, y_hint);
    }
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void finish(args const& a, row_window const& w, fragment<V, N>& f,
                                Hint hint = {}) {
    [[maybe_unused]] std::uint64_t kb[Keep ? N : 1];  // Keep: the windows' mask bytes
    if constexpr (Keep) fetch_keep<Hint, V>(keep_row_of(a, w), w, loaded(a, w).cols, kb);
    if constexpr (Masked && std::is_same_v<Hint, in_tile>) {
      plain::finish(tensors(a), loaded(a, w), f, hint);
      if constexpr (Keep) keep_both(kb, f);
    } else if constexpr (Masked) {
      const T zero = from_float<T>(0.0f);
      const std::int64_t end = loaded(a, w).cols;
      // Both tensors' ragged windows read before either is placed, as plain::finish.
      finish_windows(a.dy + w.row * a.dy_stride, a.y + w.row * a.y_stride, w, zero, f.dy, f.y, hint,
                     read_limit{end});
      fill_past<Hint>(w, end, zero, f.dy);
      fill_past<Hint>(w, end, zero, f.y);
      if constexpr (Keep) keep_both(kb, f);
    } else {
      plain::finish(tensors(a), w, f, hint);
    }
  }
  /// Keep: 0 in dy and y where the boolean mask masks the element (`kb`: fetch_keep's bytes).
  template <int V, int N>
  __device__ static void keep_both(std::uint64_t const (&kb)[N], fragment<V, N>& f) {
    apply_keeps(kb, from_float<T>(0.0f), f.dy);
    apply_keeps(kb, from_float<T>(0.0f), f.y);
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f,
                              Hint hint = {}) {
    if constexpr (Masked) {
      issue(a, w, f, hint);
      finish(a, w, f, hint);
    } else {
      plain::load(tensors(a), w, f, hint);
    }
  }
  template <int V, int N, class DyHint, class YHint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f, DyHint dy_hint,
                              YHint y_hint) {
    if constexpr (Masked) {
      issue(a, w, f, dy_hint, y_hint);
      finish(a, w, f, dy_hint);
    } else {
      plain::load(tensors(a), w, f, dy_hint, y_hint);
    }
  }
  template <int V, int N>
  __device__ static vec_t<T, V> (&kept_half(fragment<V, N>& f))[N] {
    return f.dy;
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load_other_half(args const& a, row_window const& w, fragment<V, N>& f,
                                         Hint hint = {}) {
    [[maybe_unused]] std::uint64_t kb[Keep ? N : 1];  // Keep: the windows' mask bytes
    if constexpr (Masked && std::is_same_v<Hint, in_tile>) {
      if constexpr (Keep) fetch_keep<Hint, V>(keep_row_of(a, w), w, loaded(a, w).cols, kb);
      plain::load_other_half(tensors(a), loaded(a, w), f, hint);
      if constexpr (Keep) apply_keeps(kb, from_float<T>(0.0f), f.y);
    } else if constexpr (Masked) {
      const T zero = from_float<T>(0.0f);
      const std::int64_t end = loaded(a, w).cols;
      load_windows(a.y + w.row * a.y_stride, w, zero, f.y, hint, read_limit{end});
      if constexpr (Keep) fetch_keep<Hint, V>(keep_row_of(a, w), w, end, kb);
      finish_windows(a.y + w.row * a.y_stride, w, zero, f.y, hint, read_limit{end});
      fill_past<Hint>(w, end, zero, f.y);
      if constexpr (Keep) apply_keeps(kb, zero, f.y);
    } else {
      plain::load_other_half(tensors(a), w, f, hint);
    }
  }

  /// Softmax: the thread's share of sum(dy * y); log-softmax: of sum(dy).
  template <int V, int N>
  __device__ static partial fold(fragment<V, N> const& f) {
    if constexpr (Log) {
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < N; ++k)
#pragma unroll
        for (int l = 0; l < V; ++l) s += f.dy[k].at(l);
      return {0.0f, s};
    } else {
      return plain::fold(f);
    }
  }

  template <bool OneStore = false, int V, int N, class Hint = no_hint>
  __device__ static void store(args const& a, row_window const& w, fragment<V, N> const& f,
                               partial total, Hint hint = {}) {
    const float s = row_scale_of(a.p, a.row_base + w.row);
    std::int64_t kept = 0;  // Masked: the row's kept end
    if constexpr (Masked) kept = loaded(a, w).cols;
    // Keep: the windows' mask bytes read again, all before any is used (the fragment's may be
    // another window's: the streaming and split tiers restore a stashed window's dy and y only).
    [[maybe_unused]] std::uint64_t bytes[Keep ? N : 1];
    if constexpr (Keep) fetch_keep<Hint, V>(keep_row_of(a, w), w, kept, bytes);
    // Another output type: each window stored as it is made (store_part).
    constexpr bool each = !std::is_same_v<Dx, T>;
    vec_t<Dx, V> out[each ? 1 : N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      vec_t<T, V> dy = f.dy[k], y = f.y[k];
      dy.opaque();  // convert again rather than keep fold's floats alive across the exchange
      y.opaque();
      int room = V;  // Masked: the window's lanes before the row's kept end
      if constexpr (Masked) {
        const std::int64_t left = kept - first_element<V, Hint>(w, k);
        room = left >= V ? V : left <= 0 ? 0 : static_cast<int>(left);
      }
      float dx[V];
#pragma unroll
      for (int l = 0; l < V; ++l) {
        if constexpr (Log) {
          dx[l] = (dy.at(l) - exp_diff(y.at(l), 0.0f) * total.s) * s;
        } else {
          dx[l] = (y.at(l) * (dy.at(l) - total.s)) * s;
        }
        // A masked column's dx is 0 exactly, whatever the row's sum (its dy and y read as 0);
        // compared in 32 bits a lane (64-bit element indices spilled the fp32 split and
        // streaming kernels 196-776 bytes, none so).
        if constexpr (Masked) dx[l] = l < room ? dx[l] : 0.0f;
        if constexpr (Keep) dx[l] = keeps_lane(bytes[k], l) ? dx[l] : 0.0f;
      }
      if constexpr (each) {
        store_part(a.dx + w.row * a.dx_stride, first_element<V, Hint>(w, k), w.cols,
                   vec_t<Dx, V>::round(dx), hint);
      } else {
        out[k] = vec_t<Dx, V>::round(dx);
      }
    }
    if constexpr (!each) store_windows<OneStore>(a.dx + w.row * a.dx_stride, w, out, hint);
  }
};

}  // namespace rowsoftmax::detail
