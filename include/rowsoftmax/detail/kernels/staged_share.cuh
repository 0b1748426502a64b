// SPDX-License-Identifier: Apache-2.0
// A CTA's share of a staged forward row: copied into shared memory in bulk, folded from there
// and stored given the row's total (the staged and staged split kernels, and held_back_kernel).
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "../math.cuh"
#include "../row_io.cuh"
#include "../vec.cuh"
#include "kernel_shape.cuh"

namespace rowsoftmax::detail {

/// Window `j` of a staged row of `cols` elements with a head of `shift` (a ragged one: some
/// elements outside [0, cols)), read element-wise (load_ragged), outside elements -inf. Out of
/// line: at most two a row.
template <class T, int V>
__device__ __noinline__ vec_t<T, V> staged_edge(T const* row, int cols, int shift, int j) {
  return load_ragged<T, V>(row, std::int64_t{j} * V - shift, cols, from_float<T>(neg_inf));
}

/// Its store: the in-range elements of window `j`.
template <class T, int V>
__device__ __noinline__ void staged_edge_store(T* row, int cols, int shift, int j, vec_t<T, V> v) {
  store_ragged(row, std::int64_t{j} * V - shift, cols, v);
}

/// A CTA's share of a staged forward row: CTA `rank` of `ctas` owns windows [rank * share,
/// (rank + 1) * share) of the row (as in resident_kernel) and holds them in shared memory,
/// thread i's slot k being window k * threads + i of the share. The share lands in two halves,
/// each a bulk asynchronous copy of its whole windows (issued by thread 0, counted by its own
/// mbarrier); the ragged head and tail windows each thread reads itself, and windows past the
/// share are -inf, and so are the windows past the columns the op keeps (Op::loaded: a prefix
/// mask's), which are not read. Each thread folds its slots of the first half while the second
/// lands (online: max, then the sum rescaled) and, given the row's total, stores its slots from
/// shared memory. The registers hold no row data, so the CTAs an SM runs are set by shared
/// memory (ctas_per_sm). The planner keeps a row within the shared memory of the CTAs the
/// device runs at once, so window and element counts fit an int.
template <class Op, int V, int Config>
struct staged_share {
  using shape = kernel_shape<Op, V, Config>;
  using T = typename Op::value_type;
  using vec = vec_t<T, V>;
  using Out = typename Op::output_type;
  static constexpr int threads = shape::threads_per_cta;
  static constexpr int slots = shape::slots;
  static constexpr int half = slots / 2;  // slots a half
  static_assert(Op::dir == direction::forward && Op::inputs == 1 &&
                    shape::threads_per_row == threads && slots % 2 == 0,
                "forward, one input, one row a CTA, two halves");

  T const* input;  // the row's start in the op's input
  Out* output;     // and in its output
  int cols;        // the row's elements, all written
  int kept;        // those read (Op::loaded), a prefix
  int shift;
  int first;   // the share's first window in the row
  int owned;   // windows of the row in the share (at most its slots; none or fewer at the end)
  int read;    // those holding a kept element (at most owned; <= 0: none)
  int whole0;  // the share's whole windows, [whole0, whole1) counted from its first
  int whole1;
  int whole_kept;  // the end of those of kept elements only, [whole0, whole_kept)
  int at;          // the share's first element in the row
  int held_back;   // windows of the share, from its first, that `store` leaves (see skip_windows)
  typename Op::row_state rs;  // what the op keeps a row (fused ops: the row's scale, options)

  /// `share`: the windows each CTA holds, the same for every row (share_windows: the plan's
  /// widest row over the CTAs, rounded up; computed by the host, where a division costs the
  /// CTA no wait for the SM's special-function unit, which the exps keep busy). Windows of row 0
  /// before `skip_windows` are not stored (split_workspace::skip_windows).
  __device__ staged_share(typename Op::args const& args, std::int64_t row, int rank, int share,
                          int skip_windows = 0) {
    const row_window window = Op::template window<V>(args, row, 0, 1);
    input = Op::input_row(args, 0, window.row);
    output = Op::output_row(args, window.row);
    cols = static_cast<int>(window.cols);
    shift = window.shift;
    const std::int64_t windows = windows_of<V>(window);
    first = rank * share;
    owned = min(static_cast<int>(windows) - first, share);
    whole0 = max((shift > 0 ? 1 : 0) - first, 0);
    whole1 = min((cols + shift) / V - first, owned);
    const row_window kept_window = Op::loaded(args, window);
    kept = static_cast<int>(kept_window.cols);
    read = min(static_cast<int>(windows_of<V>(kept_window)) - first, share);
    whole_kept = min((kept + shift) / V - first, read);
    at = first * V - shift;
    held_back = row == 0 ? max(min(skip_windows - first, owned), 0) : 0;
    rs = Op::staged_row(args, window.row);
  }

  /// Thread 0: the copy of half `h`'s whole windows into `staged`, counted by `landed[h]`
  /// (which completes its phase when they have landed, at once if there are none).
  __device__ void issue(int h, uint4* staged, std::uint64_t* landed) const {
    const int lo = max(h * half * threads, whole0), hi = min((h + 1) * half * threads, whole_kept);
    const std::uint32_t bytes = hi > lo ? static_cast<std::uint32_t>(hi - lo) * 16u : 0u;
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &landed[h], bytes);
    if (bytes > 0)
      cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, &staged[lo],
                               input + at + lo * V, bytes, &landed[h]);
  }

  /// Every thread, once a kernel, then a __syncthreads: thread 0 initializes the two halves'
  /// mbarriers and issues the share's copies; each thread fills its edges.
  __device__ void start(uint4* staged, std::uint64_t* landed) const {
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_init(&landed[0], 1);
      cuda::ptx::mbarrier_init(&landed[1], 1);
      cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
      issue(0, staged, landed);
      issue(1, staged, landed);
    }
    edges(staged);
  }

  /// The slots the copies do not fill: those past the share's kept windows -inf; the ragged
  /// windows, at most the share's first (where whole0 is 1) and the one after its whole kept ones
  /// (whole_kept, where it is read), each read from the input, so that no thread checks each of
  /// its slots (tuning log, staged rows). Every thread fills only its own slots, the ones it
  /// folds: the staged split fills the next row's while that row's copies land, with no barrier
  /// before the fold, and the slots held the last row's elements.
  __device__ void edges(uint4* staged) const {
    const int thread = static_cast<int>(threadIdx.x);
    vec neg;
#pragma unroll
    for (int i = 0; i < vec::words; ++i) neg.w[i] = vec::fill_word(from_float<T>(neg_inf));
    const int from = max(read, 0);
    // From the thread's first slot at or past `from`: slot i is thread i % threads's.
    for (int i = from + (thread - from % threads + threads) % threads; i < slots * threads;
         i += threads)
      staged[i] = bits_as<uint4>(neg);
    if (thread == 0 && whole0 > 0 && read > 0)
      staged[0] = bits_as<uint4>(staged_edge<T, V>(input, kept, shift, first));
    if (whole_kept >= whole0 && whole_kept < read && whole_kept % threads == thread)
      staged[whole_kept] =
          bits_as<uint4>(staged_edge<T, V>(input, kept, shift, first + whole_kept));
  }

  /// The thread's partial over its slots, each half folded once it has landed (`parity`: the
  /// phase of the mbarriers it waits for).
  __device__ partial fold(uint4 const* staged, std::uint64_t* landed, int parity) const {
    float running_max = neg_inf, running_sum = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      while (!cuda::ptx::mbarrier_try_wait_parity(&landed[h], static_cast<std::uint32_t>(parity))) {
      }
      if constexpr (Op::biases_staged) {
        // Biased: each window's logits folded into the running total (Op::fold_at).
#pragma unroll
        for (int k = 0; k < half; ++k) {
          const std::int64_t e0 = element((h * half + k) * threads);
          const vec x = Op::staged_window(
              bits_as<vec>(staged[(h * half + k) * threads + threadIdx.x]), rs, e0);
          Op::fold_at(x, rs, e0, running_max, running_sum);
        }
        continue;
      }
      vec v[half];
      float half_max = neg_inf;
#pragma unroll
      for (int k = 0; k < half; ++k) {
        v[k] = bits_as<vec>(staged[(h * half + k) * threads + threadIdx.x]);
        if constexpr (Op::masks_staged)
          v[k] = Op::staged_window(v[k], rs, element((h * half + k) * threads));
        half_max = fmaxf(half_max, Op::max_of(v[k], rs));
      }
      const float new_max = fmaxf(running_max, half_max), exp_shift = safe_shift(new_max);
      const float half_sum =
          with_exp(exp_shift, [&](auto const& e) { return Op::exp_sum_of(v, e, rs); });
      running_sum = running_sum * exp_diff(running_max, exp_shift) + half_sum;
      running_max = new_max;
    }
    return {running_max, running_sum};
  }

  /// The thread's slots [K0, K1) of the share, normalized by the row's total, into the output
  /// (with K0 == 0, the row's log-sum-exp where the op writes one, by the row's first thread).
  template <int K0, int K1>
  __device__ void store(uint4 const* staged, partial total) const {
    if constexpr (K0 == 0)
      if (first == 0 && cols > 0 && threadIdx.x == 0) Op::staged_lse(rs, total);
    const float exp_shift = safe_shift(total.m), inv = 1.0f / total.s;
    if (fused_exp::fits(exp_shift)) {
      store_with<K0, K1>(staged, fused_exp(exp_shift), inv, total);
    } else {
      store_with<K0, K1>(staged, shifted_exp{exp_shift}, inv, total);
    }
  }
  template <int K0, int K1, class E>
  __device__ void store_with(uint4 const* staged, E const& e, float inv, partial total) const {
#pragma unroll 2
    for (int k = K0; k < K1; ++k) {
      const int i = k * threads + static_cast<int>(threadIdx.x);
      if (i < owned && i >= held_back) {
        if constexpr (Op::biases_staged) {
          const std::int64_t e0 = element(k * threads);
          const vec x = Op::staged_window(bits_as<vec>(staged[i]), rs, e0);
          store_window(i, Op::normalized_at(x, e, inv, total, rs, e0));
        } else if constexpr (Op::masks_staged) {
          const vec x = Op::staged_window(bits_as<vec>(staged[i]), rs, element(k * threads));
          store_window(i, Op::normalized_of(x, e, inv, total, rs));
        } else {
          store_window(i, Op::normalized_of(bits_as<vec>(staged[i]), e, inv, total, rs));
        }
      }
    }
  }

  /// Window `i` of the share (from its first) into the output: a whole window as one vector, a
  /// ragged one element-wise.
  __device__ void store_window(int i, vec_t<Out, V> const& out) const {
    if (i >= whole0 && i < whole1) {
      out.store(output + at + i * V);
    } else {
      staged_edge_store<Out, V>(output, cols, shift, first + i, out);
    }
  }

  /// The row's element of the first lane of the thread's window `i0 + threadIdx.x` of the share.
  __device__ std::int64_t element(int i0) const {
    return at + std::int64_t{i0 + static_cast<int>(threadIdx.x)} * V;
  }

  /// Window `i` of the share read from the input as `start` stages it (which copies whole
  /// windows in bulk instead).
  __device__ vec load_window(int i) const {
    return i >= whole0 && i < whole_kept ? vec::load(input + at + i * V, no_hint{})
                                         : staged_edge<T, V>(input, kept, shift, first + i);
  }

  /// The windows `store` holds back (row 0's, those the workspace covers), read again, normalized
  /// by the row's total (as `store` does) and stored, `Batch` a thread at a time: `total()` gives
  /// it, called once, after the first batch's loads (see held_back_kernel).
  template <int Batch, class Total>
  __device__ void store_held_back(Total&& total) const {
    partial row_total{};
    for (int i0 = 0; i0 < held_back; i0 += Batch * threads) {
      vec v[Batch];
#pragma unroll
      for (int k = 0; k < Batch; ++k) {
        const int i = i0 + k * threads + static_cast<int>(threadIdx.x);
        if (i < held_back) v[k] = load_window(i);
        if constexpr (Op::masks_staged)
          if (i < held_back) v[k] = Op::staged_window(v[k], rs, element(i0 + k * threads));
      }
      if (i0 == 0) row_total = total();
      const float exp_shift = safe_shift(row_total.m), inv = 1.0f / row_total.s;
#pragma unroll
      for (int k = 0; k < Batch; ++k) {
        const int i = i0 + k * threads + static_cast<int>(threadIdx.x);
        if (i < held_back)
          store_window(i, with_exp(exp_shift, [&](auto const& e) {
                         if constexpr (Op::biases_staged) {
                           return Op::normalized_at(v[k], e, inv, row_total, rs,
                                                    element(i0 + k * threads));
                         } else {
                           return Op::normalized_of(v[k], e, inv, row_total, rs);
                         }
                       }));
      }
    }
  }
};

}  // namespace rowsoftmax::detail
