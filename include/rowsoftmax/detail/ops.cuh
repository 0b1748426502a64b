// SPDX-License-Identifier: Apache-2.0
// What a row op does with its elements, apart from where they live: load (with the value that
// fills out-of-range elements), fold into a thread partial, and store given the row's total.
// The kernels (kernels/) are written once against this interface, so an op works in every
// tier, and reach the op's tensors only through it. Each op declares its direction (`dir`, which
// the planner and the kernels branch on), the tensors it reads and writes an element (`inputs`,
// `outputs`, which size its registers and stashes), the element type of its inputs
// (`value_type`: its vector width, registers and stashes) and of its output (`output_type`).
// Element-wise prologues (scale, masks) belong in `load`, epilogues (log-softmax, another output
// type) in `store`.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../plan.hpp"
#include "math.cuh"
#include "row_io.cuh"
#include "vec.cuh"

namespace rowsoftmax::detail {

/// y = softmax(x) along each row. Thread partial: (max, sum of exp(x - max)) over its slots.
/// fp32 slots are overwritten by fold with exp(x - thread max), so each element takes one exp2;
/// 16-bit slots stay packed (half the registers of converted floats, so a thread holds twice
/// the elements) and the store takes the exp again from x; one-CTA register rows run
/// float_exps_forward_op instead, which keeps the exps.
template <class T>
struct forward_op {
  using value_type = T;
  using output_type = T;
  using reduce = online_reduce;
  static constexpr direction dir = direction::forward;
  static constexpr int inputs = 1;   // tensors read an element: x
  static constexpr int outputs = 1;  // tensors written an element: y
  static constexpr bool keeps_exp = std::is_same_v<T, float>;

  struct args {
    T const* x;
    std::int64_t x_stride;
    T* y;
    std::int64_t y_stride;
    std::int64_t rows;
    std::int64_t cols;
  };

  template <int V, int N>
  struct fragment {
    vec_t<T, V> v[N];  // x as loaded; fp32: exp(x - m) after fold
    float m;           // max over this thread's slots (-inf if none is valid), set by load
  };

  template <int V>
  __device__ static row_window window(args const& a, std::int64_t row, std::int64_t first,
                                      int stride) {
    const bool active = row < a.rows;
    const std::int64_t r = active ? row : 0;
    return {r, active ? a.cols : 0, first, stride, head_of<V>(a.x + r * a.x_stride)};
  }

  /// Input tensor `t` and the output; row `row` of each. Tiled rows (tiled_kernel): `a` with
  /// `rows` rows read from `tiles` (one an input tensor, rows `a.cols` apart) and written over
  /// the first.
  __device__ static T const* input(args const& a, int) { return a.x; }
  __host__ __device__ static T* output(args const& a) { return a.y; }
  __device__ static T const* input_row(args const& a, int, std::int64_t row) {
    return a.x + row * a.x_stride;
  }
  __device__ static T* output_row(args const& a, std::int64_t row) {
    return a.y + row * a.y_stride;
  }
  __device__ static args on_tiles(args const& a, T* const (&tiles)[inputs], std::int64_t rows,
                                  std::int64_t /*first_row*/) {
    return {tiles[0], a.cols, tiles[0], a.cols, rows, a.cols};
  }

  /// Issues the loads of the thread's windows of row `w` (see load_windows); `finish` then
  /// completes them. Apart, so that a thread of several rows issues all their loads first.
  template <int V, int N, class Hint = no_hint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               Hint hint = {}) {
    load_windows(a.x + w.row * a.x_stride, w, from_float<T>(neg_inf), f.v, hint);
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void finish(args const& a, row_window const& w, fragment<V, N>& f,
                                Hint hint = {}) {
    finish_windows(a.x + w.row * a.x_stride, w, from_float<T>(neg_inf), f.v, hint);
    f.m = neg_inf;
#pragma unroll
    for (int k = 0; k < N; ++k) f.m = fmaxf(f.m, f.v[k].max());
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f,
                              Hint hint = {}) {
    issue(a, w, f, hint);
    finish(a, w, f, hint);
  }

  /// The sum of exp(x - shift) over the elements of `v` (`e`: shifted_exp or fused_exp, its
  /// scale applied to the sum); fp32 elements are overwritten by their exps where `Keep`
  /// (shifted_exp only).
  template <bool Keep, int V, int N, class E>
  __device__ static float exp_sum(vec_t<T, V> (&v)[N], E const& e) {
    static_assert(!Keep || std::is_same_v<E, shifted_exp>, "kept exps carry no scale");
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int l = 0; l < V; ++l) {
        const float x = e(v[k].at(l));
        if constexpr (Keep) v[k].w[l] = bits_as<std::uint32_t>(x);
        s += x;
      }
    return s * e.scale;
  }

  /// exp(x - shift) * inv, rounded to `Out` (`e` as for exp_sum).
  template <class Out = T, int V, class E>
  __device__ static vec_t<Out, V> normalized(vec_t<T, V> const& x, E const& e, float inv) {
    const float k = inv * e.scale;
    float y[V];
#pragma unroll
    for (int l = 0; l < V; ++l) y[l] = e(x.at(l)) * k;
    return vec_t<Out, V>::round(y);
  }

  template <int V, int N>
  __device__ static partial fold(fragment<V, N>& f) {
    return {f.m, exp_sum<keeps_exp>(f.v, shifted_exp{safe_shift(f.m)})};
  }

  /// fp32: y = exp(x - m_thread) * exp(m_thread - M) / S; 16-bit: y = exp(x - M) * (1 / S).
  /// A thread whose slots were all -inf writes zeros, unless the whole row is -inf (M = -inf,
  /// S = 0), which gives NaN as torch.softmax does.
  template <bool OneStore = false, int V, int N, class Hint = no_hint>
  __device__ static void store(args const& a, row_window const& w, fragment<V, N> const& f,
                               partial total, Hint hint = {}) {
    const float shift = safe_shift(total.m);
    vec_t<T, V> out[N];
    if constexpr (keeps_exp) {
      const float scale = exp_diff(f.m, shift) / total.s;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        float y[V];
#pragma unroll
        for (int l = 0; l < V; ++l) y[l] = f.v[k].at(l) * scale;
        out[k] = vec_t<T, V>::round(y);
      }
    } else {
      const float inv = 1.0f / total.s;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        vec_t<T, V> x = f.v[k];
        x.opaque();  // convert again rather than keep fold's floats alive across the exchange
        out[k] = normalized(x, shifted_exp{shift}, inv);
      }
    }
    store_windows<OneStore>(a.y + w.row * a.y_stride, w, out, hint);
  }

  // The staged tiers (staged_share) fold and store windows of x from shared memory through
  // these, with one row_state a row (the fused ops keep their scale and options there), and
  // read the part of a row `loaded` returns (the fused ops' prefix masks keep less of it).
  __device__ static row_window loaded(args const&, row_window const& w) {
    return w;
  }
  struct row_state {};
  __device__ static row_state staged_row(args const&, std::int64_t) {
    return {};
  }
  /// Whether the staged tiers pass each window of x through `staged_window(x, row_state, e0)`
  /// (e0: the row's element of its first lane) before they fold and store it: the fused ops'
  /// boolean mask, which puts -inf in its masked elements.
  static constexpr bool masks_staged = false;
  static constexpr bool biases_staged = false;  // see fused_forward_op
  template <int V>
  __device__ static float max_of(vec_t<T, V> const& v, row_state) {
    return v.max();
  }
  template <int V, int N, class E>
  __device__ static float exp_sum_of(vec_t<T, V> (&v)[N], E const& e, row_state) {
    return exp_sum<false>(v, e);
  }
  template <int V, class E>
  __device__ static vec_t<T, V> normalized_of(vec_t<T, V> const& x, E const& e, float inv, partial,
                                              row_state) {
    return normalized(x, e, inv);
  }
  __device__ static void staged_lse(row_state, partial) {}
};

/// forward_op for 16-bit rows held by one CTA in registers (the dispatcher's choice, see
/// resident_op): fold keeps each exp(x - thread max) as a float until the store, as fp32 slots
/// do, so an element takes one exp instead of two, at twice the registers of the packed slots
/// (the register bound counts them: `floats_kept`, see ctas_per_sm). The rows it runs are
/// instruction-bound packed (tuning log, one-CTA register rows).
template <class T>
struct float_exps_forward_op : forward_op<T> {
  using base = forward_op<T>;
  using typename base::args;
  static constexpr bool keeps_exp = true;
  static constexpr bool floats_kept = true;

  /// forward_op's fragment (x as loaded and the thread's max, filled by forward_op's issue,
  /// finish and load), with the exps fold keeps.
  template <int V, int N>
  struct fragment : base::template fragment<V, N> {
    float e[N * V];  // exp(x - m) from fold
  };

  template <int V, int N>
  __device__ static partial fold(fragment<V, N>& f) {
    const shifted_exp e{safe_shift(f.m)};
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int l = 0; l < V; ++l) {
        f.e[k * V + l] = e(f.v[k].at(l));
        s += f.e[k * V + l];
      }
    return {f.m, s};
  }

  /// y = exp(x - m_thread) * exp(m_thread - M) / S, as forward_op's fp32 store.
  template <bool OneStore = false, int V, int N, class Hint = no_hint>
  __device__ static void store(args const& a, row_window const& w, fragment<V, N> const& f,
                               partial total, Hint hint = {}) {
    const float scale = exp_diff(f.m, safe_shift(total.m)) / total.s;
    vec_t<T, V> out[N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      float y[V];
#pragma unroll
      for (int l = 0; l < V; ++l) y[l] = f.e[k * V + l] * scale;
      out[k] = vec_t<T, V>::round(y);
    }
    store_windows<OneStore>(a.y + w.row * a.y_stride, w, out, hint);
  }
};

/// The op the register tier's kernel of configuration `Config` runs for `Op`: 16-bit plain
/// forward rows of one CTA a row and one row a thread keep their exps as floats
/// (float_exps_forward_op); every other op and configuration runs as itself.
template <class Op, int Config, class = void>
struct resident_op {
  using type = Op;
};
template <class T, int Config>
struct resident_op<
    forward_op<T>, Config,
    std::enable_if_t<!std::is_same_v<T, float> &&
                     kernel_configs[Config].algo == algorithm::registers &&
                     !kernel_configs[Config].clustered && !kernel_configs[Config].tiled &&
                     kernel_configs[Config].rows_per_thread == 1>> {
  using type = float_exps_forward_op<T>;
};
template <class Op, int Config>
using resident_op_t = typename resident_op<Op, Config>::type;

/// dx = y * (dy - sum(dy * y)) along each row. Thread partial: its share of sum(dy * y).
template <class T>
struct backward_op {
  using value_type = T;
  using output_type = T;
  using reduce = sum_reduce;
  static constexpr direction dir = direction::backward;
  static constexpr int inputs = 2;   // tensors read an element: dy, y
  static constexpr int outputs = 1;  // tensors written an element: dx

  struct args {
    T const* dy;
    std::int64_t dy_stride;
    T const* y;
    std::int64_t y_stride;
    T* dx;
    std::int64_t dx_stride;
    std::int64_t rows;
    std::int64_t cols;
  };

  template <int V, int N>
  struct fragment {
    vec_t<T, V> dy[N];
    vec_t<T, V> y[N];
  };

  template <int V>
  __device__ static row_window window(args const& a, std::int64_t row, std::int64_t first,
                                      int stride) {
    const bool active = row < a.rows;
    const std::int64_t r = active ? row : 0;
    return {r, active ? a.cols : 0, first, stride, head_of<V>(a.dy + r * a.dy_stride)};
  }

  /// As forward_op: dy, then y, read from tiles; dx written over dy's.
  __device__ static T const* input(args const& a, int t) { return t == 0 ? a.dy : a.y; }
  __host__ __device__ static T* output(args const& a) { return a.dx; }
  __device__ static T const* input_row(args const& a, int t, std::int64_t row) {
    return t == 0 ? a.dy + row * a.dy_stride : a.y + row * a.y_stride;
  }
  __device__ static T* output_row(args const& a, std::int64_t row) {
    return a.dx + row * a.dx_stride;
  }
  __device__ static args on_tiles(args const& a, T* const (&tiles)[inputs], std::int64_t rows,
                                  std::int64_t /*first_row*/) {
    return {tiles[0], a.cols, tiles[1], a.cols, tiles[0], a.cols, rows, a.cols};
  }

  /// As forward_op: `issue` the loads, `finish` them once every load is issued. dy and y may
  /// take hints of their own (`dy_hint`, `y_hint`).
  template <int V, int N, class Hint = no_hint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               Hint hint = {}) {
    issue(a, w, f, hint, hint);
  }
  template <int V, int N, class DyHint, class YHint>
  __device__ static void issue(args const& a, row_window const& w, fragment<V, N>& f,
                               DyHint dy_hint, YHint y_hint) {
    const T zero = from_float<T>(0.0f);
    load_windows(a.dy + w.row * a.dy_stride, w, zero, f.dy, dy_hint);
    load_windows(a.y + w.row * a.y_stride, w, zero, f.y, y_hint);
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void finish(args const& a, row_window const& w, fragment<V, N>& f,
                                Hint hint = {}) {
    const T zero = from_float<T>(0.0f);
    // After both tensors' loads are issued; both tensors' ragged windows read before either is
    // placed (see the two-tensor finish_windows).
    finish_windows(a.dy + w.row * a.dy_stride, a.y + w.row * a.y_stride, w, zero, f.dy, f.y, hint);
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f,
                              Hint hint = {}) {
    issue(a, w, f, hint);
    finish(a, w, f, hint);
  }
  /// `load` with hints of its own for dy (also for the ragged windows' reads) and y.
  template <int V, int N, class DyHint, class YHint>
  __device__ static void load(args const& a, row_window const& w, fragment<V, N>& f, DyHint dy_hint,
                              YHint y_hint) {
    issue(a, w, f, dy_hint, y_hint);
    finish(a, w, f, dy_hint);
  }

  /// A split CTA keeps some tiles' dy alone in shared memory (plan::stash_halves): `kept_half`
  /// is that part of a fragment, and `load_other_half` reads the rest of the fragment, y, again.
  template <int V, int N>
  __device__ static vec_t<T, V> (&kept_half(fragment<V, N>& f))[N] {
    return f.dy;
  }
  template <int V, int N, class Hint = no_hint>
  __device__ static void load_other_half(args const& a, row_window const& w, fragment<V, N>& f,
                                         Hint hint = {}) {
    const T zero = from_float<T>(0.0f);
    load_windows(a.y + w.row * a.y_stride, w, zero, f.y, hint);
    finish_windows(a.y + w.row * a.y_stride, w, zero, f.y, hint);
  }

  template <int V, int N>
  __device__ static partial fold(fragment<V, N> const& f) {
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int l = 0; l < V; ++l) s = fmaf(f.dy[k].at(l), f.y[k].at(l), s);
    return {0.0f, s};
  }

  template <bool OneStore = false, int V, int N, class Hint = no_hint>
  __device__ static void store(args const& a, row_window const& w, fragment<V, N> const& f,
                               partial total, Hint hint = {}) {
    vec_t<T, V> out[N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      vec_t<T, V> dy = f.dy[k], y = f.y[k];
      dy.opaque();  // convert again rather than keep fold's floats alive across the exchange
      y.opaque();
      float dx[V];
#pragma unroll
      for (int l = 0; l < V; ++l) dx[l] = y.at(l) * (dy.at(l) - total.s);
      out[k] = vec_t<T, V>::round(dx);
    }
    store_windows<OneStore>(a.dx + w.row * a.dx_stride, w, out, hint);
  }
};

}  // namespace rowsoftmax::detail
