// SPDX-License-Identifier: Apache-2.0
// Loading and storing a thread's share of one row: 16-byte vectors where a whole vector lies
// inside the row, element-wise predicated accesses at the (possibly misaligned) head and the
// tail. Written once; every op and every tier goes through these two functions.
#pragma once

#include <cstdint>
#include <type_traits>

#include "vec.cuh"

namespace rowsoftmax::detail {

/// One thread's view of one row. Window j covers elements [j*V - shift, j*V - shift + V) of
/// the row; the address of its first element is V-aligned, so a window that lies wholly inside
/// [0, cols) is one aligned vector access.
struct row_window {
  std::int64_t row;    ///< row index, clamped into range for inactive threads
  std::int64_t cols;   ///< elements before this limit are valid: the row length (or the end of
                       ///< this CTA's share of a cluster row), 0 for a row past the end
  std::int64_t first;  ///< window of this thread's slot 0; slot k is first + k * stride
  int stride;          ///< windows between a thread's slots: the threads sharing the row
  int shift;           ///< elements between the aligned base and the row start (the head)
};

/// Windows of the row `w` covers: its elements and its head.
template <int V>
__device__ inline std::int64_t windows_of(row_window const& w) {
  return (w.cols + w.shift + V - 1) / V;
}

/// Elements before a row start in its aligned vector: the head the window grid peels.
template <int V, class T>
__device__ inline int head_of(T const* row_start) {
  if constexpr (V == 1) {
    return 0;
  } else {
    return static_cast<int>((reinterpret_cast<std::uintptr_t>(row_start) / sizeof(T)) % V);
  }
}

/// Where `load_windows` and `store_windows` find a row: in global memory (the hint types, see
/// l2_hint), or, `in_tile`, in a shared-memory tile at any element alignment (tiled_kernel). A
/// tile's windows start at the row's start (shift 0: window j covers elements [j*V, j*V + V)); a
/// window is read as the 32-bit words that cover it, realigned with byte permutes (16-bit rows
/// that start at an odd element), and written element by element, so that every lane runs the
/// same instructions whatever its row's alignment, where windows as in global memory would read
/// and write a ragged head and tail every row element-wise (tuning log, short rows). A
/// tile holds a word after its last row's last window.
struct in_tile {};

/// The row's element of window slot `k`'s first lane, as `load_windows` and `store_windows`
/// place it for `Hint` (a tile's windows start at the row's start).
template <int V, class Hint>
__device__ inline std::int64_t first_element(row_window const& w, int k) {
  const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V;
  return std::is_same_v<Hint, in_tile> ? e0 : e0 - w.shift;
}

template <class T, int V, int N>
__device__ inline void load_tile_windows(T const* row, row_window const& w, T fill,
                                         vec_t<T, V> (&out)[N]) {
  using vec = vec_t<T, V>;
  using word = typename vec::word;
  static_assert(sizeof(word) == 4, "16-byte windows");
  const word f = vec::fill_word(fill);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V;
    T const* p = row + e0;
    if constexpr (vec::per_word == 2) {
      const bool odd = (reinterpret_cast<std::uintptr_t>(p) & 2) != 0;
      word const* q = reinterpret_cast<word const*>(p - (odd ? 1 : 0));
      word x[vec::words + 1];
#pragma unroll
      for (int i = 0; i <= vec::words; ++i) x[i] = q[i];
#pragma unroll
      for (int i = 0; i < vec::words; ++i)
        out[k].w[i] = odd ? __byte_perm(x[i], x[i + 1], 0x5432) : x[i];
    } else {
#pragma unroll
      for (int i = 0; i < vec::words; ++i) out[k].w[i] = reinterpret_cast<word const*>(p)[i];
    }
    if (e0 + V > w.cols) {  // the row's last window, or one past it: `fill` beyond the row
#pragma unroll
      for (int i = 0; i < vec::words; ++i) {
        word m = 0;
#pragma unroll
        for (int h = 0; h < vec::per_word; ++h)
          if (e0 + i * vec::per_word + h >= w.cols)
            m |= vec::per_word == 1 ? ~word{0} : word{0xffffu} << (16 * h);
        out[k].w[i] = (out[k].w[i] & ~m) | (f & m);
      }
    }
  }
}

template <class T, int V, int N>
__device__ inline void store_tile_windows(T* row, row_window const& w, vec_t<T, V> const (&in)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V;
#pragma unroll
    for (int l = 0; l < V; ++l)
      if (e0 + l < w.cols) row[e0 + l] = in[k].get(l);
  }
}

/// The lanes [lo, hi) of the window of V elements at `e0` that lie in a row of `cols` elements
/// (32-bit bounds for the lanes' predicates; lo >= hi: none).
struct lanes {
  int lo;
  int hi;
};

template <int V>
__device__ inline lanes lanes_in_row(std::int64_t e0, std::int64_t cols) {
  const int lo = e0 >= 0 ? 0 : e0 <= -V ? V : static_cast<int>(-e0);
  const int hi = cols - e0 >= V ? V : cols - e0 <= 0 ? 0 : static_cast<int>(cols - e0);
  return {lo, hi};
}

/// The elements [e0, e0 + V) of a row of `cols` elements that lie in [0, cols), read one by one
/// (predicated loads, no branches), `fill` elsewhere: a window the row covers in part (a
/// misaligned head, a tail).
template <class T, int V>
__device__ inline vec_t<T, V> load_ragged(T const* row, std::int64_t e0, std::int64_t cols,
                                          T fill) {
  const lanes in = lanes_in_row<V>(e0, cols);
  T x[V];
#pragma unroll
  for (int l = 0; l < V; ++l) x[l] = l >= in.lo && l < in.hi ? row[e0 + l] : fill;
  return vec_t<T, V>::of(x);
}

/// A window the row covers in part, as `read_ragged` read it (the two-tensor `finish_windows`):
/// its words, and the lanes that lie in the row. A 16-bit word with one element in the row holds
/// that element in its low half until `packed` moves it into place.
template <class T, int V>
struct ragged_read {
  vec_t<T, V> v;
  lanes in;
};

/// Reads the elements [e0, e0 + V) of a row that lie in the lanes `in` (lanes_in_row; none: no
/// access), word by word: a word wholly in the row is one 32-bit load, a 16-bit word with one
/// element in it a 16-bit load of that element, other words `fill`. Predicated loads, no
/// branches; nothing here waits for them (see `packed`).
template <class T, int V>
__device__ inline ragged_read<T, V> read_ragged(T const* row, std::int64_t e0, lanes in, T fill) {
  using vec = vec_t<T, V>;
  using word = typename vec::word;
  ragged_read<T, V> r;
  r.in = in;
#pragma unroll
  for (int i = 0; i < vec::words; ++i) {
    const int lo = i * vec::per_word, hi = lo + vec::per_word - 1;
    const bool lo_in = lo >= in.lo && lo < in.hi, hi_in = hi >= in.lo && hi < in.hi;
    word x = vec::fill_word(fill);
    if (lo_in && hi_in) {
      x = *reinterpret_cast<word const*>(row + e0 + lo);
    } else if (lo_in || hi_in) {  // 16-bit only
      x = *reinterpret_cast<std::uint16_t const*>(row + e0 + (lo_in ? lo : hi));
    }
    r.v.w[i] = x;
  }
  return r;
}

/// The window `r` read, each element alone in its word moved into its half, `fill` in the other.
template <class T, int V>
__device__ inline vec_t<T, V> packed(ragged_read<T, V> const& r, T fill) {
  using vec = vec_t<T, V>;
  vec v = r.v;
  if constexpr (vec::per_word == 2) {
    const std::uint32_t f = bits_as<std::uint16_t>(fill);
#pragma unroll
    for (int i = 0; i < vec::words; ++i) {
      const int lo = 2 * i, hi = lo + 1;
      const bool lo_in = lo >= r.in.lo && lo < r.in.hi, hi_in = hi >= r.in.lo && hi < r.in.hi;
      if (lo_in && !hi_in) v.w[i] = (v.w[i] & 0xffffu) | (f << 16);
      if (hi_in && !lo_in) v.w[i] = (v.w[i] << 16) | f;
    }
  }
  return v;
}

/// Writes the elements of `v` that lie in [0, cols) at [e0, e0 + V), one by one.
template <class T, int V>
__device__ inline void store_ragged(T* row, std::int64_t e0, std::int64_t cols,
                                    vec_t<T, V> const& v) {
  const lanes in = lanes_in_row<V>(e0, cols);
#pragma unroll
  for (int l = 0; l < V; ++l)
    if (l >= in.lo && l < in.hi) row[e0 + l] = v.get(l);
}

/// The windows of a thread that the row covers in part, as the thread's slots (-1: none): the
/// head, the row's first window, where the row starts inside it (misaligned) or ends inside it
/// (a row shorter than a window); and the tail, the row's last window, where the row ends
/// inside it (and it is not the first). Every other window lies wholly inside or outside
/// [0, cols), so is one vector access or none: a cluster CTA's share ends at a window boundary.
struct ragged_slots {
  int head = -1;
  int tail = -1;
  std::int64_t tail_e0 = 0;  ///< the tail window's first element in the row (e0)
};

/// The ragged slots of a thread of N slots at window `w`.
template <int V, int N>
__device__ inline ragged_slots ragged_of(row_window const& w) {
  ragged_slots r;
  if (w.cols <= 0) return r;
  const std::int64_t end = w.cols + w.shift;  // one past the row's last element in the grid
  if (w.first == 0 && (w.shift != 0 || end < V)) r.head = 0;
  const std::int64_t last = (end - 1) / V;  // the row's last window
  const std::int64_t d = last - w.first;    // from this thread's first
  if (end % V != 0 && last > 0 && d >= 0 && d % w.stride == 0 && d / w.stride < N) {
    r.tail = static_cast<int>(d / w.stride);
    r.tail_e0 = last * V - w.shift;
  }
  return r;
}

/// Where a row's reads stop (a fused op's prefix masks): elements at or past `end` are `fill`.
/// `load_windows` reads no whole window that starts there (a window holding `end` is read
/// whole, and the row's ragged windows as without a limit); `fill_past` then puts `fill` in
/// every element past it. So a row's kept end costs its window's selects, where a row that ends
/// there reads that window element by element (16-bit rows: several times the instructions of
/// a vector; tuning log, masks).
struct read_limit {
  std::int64_t end;
};
/// No limit: the row's loads read every window in [0, cols) (the unmasked ops).
struct no_limit {};

/// The end of what the ragged windows of `w` read under `limit`.
template <class Limit>
__device__ inline std::int64_t read_end(row_window const& w, Limit const& limit) {
  if constexpr (std::is_same_v<Limit, no_limit>) {
    return w.cols;
  } else {
    return w.cols < limit.end ? w.cols : limit.end;
  }
}

/// Whether `load_windows` leaves the windows a row covers in part (ragged_of) to
/// `finish_windows`, read there element by element once every load of the row is issued: for
/// 16-bit rows of more than one slot a thread. Elsewhere `load_windows` reads them itself, word
/// by word in the slot's branch. Deferred, the thread that holds a ragged window does not hold
/// back its warp's loads; for 4-byte rows and rows of one slot a thread the deferred reads cost
/// more registers than they save (tuning log, row I/O and ragged windows).
template <class T, int N>
inline constexpr bool defers_ragged = sizeof(T) == 2 && N > 1;

/// Reads N windows (`w.stride` windows apart) of a row into registers; elements outside
/// [0, cols) read as `fill` and touch no memory. A window wholly inside the row is one vector
/// load (with `hint`, see l2_hint). A window the row covers in part is, where defers_ragged,
/// left as `fill` for `finish_windows`; elsewhere read word by word straight into its registers,
/// a 16-bit word with one element in the row read as that element alone and completed with
/// `fill` by `finish_windows`. The op calls `finish_windows` after its last `load_windows`:
/// every load of the row is issued before any loaded value is used: packing the element here
/// would wait for its load before the thread's later loads are issued, one more memory latency
/// for the warp and so for its row (tuning log, row I/O and ragged windows).
///
/// `limit` (read_limit, global memory only): the whole windows that start at or past
/// `limit.end` are `fill`, not read; the ragged ones are read up to it; `fill_past` then fills
/// the window that holds it.
template <class T, int V, int N, class Hint = no_hint, class Limit = no_limit>
__device__ inline void load_windows(T const* row, row_window const& w, T fill,
                                    vec_t<T, V> (&out)[N], Hint hint = {}, Limit limit = {}) {
  using vec = vec_t<T, V>;
  if constexpr (std::is_same_v<Hint, in_tile>) {
    static_assert(std::is_same_v<Limit, no_limit>, "a tile's windows are narrowed instead");
    load_tile_windows(row, w, fill, out);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V - w.shift;
      if (e0 >= 0 && e0 + V <= w.cols) {
        if constexpr (std::is_same_v<Limit, no_limit>) {
          out[k] = vec::load(row + e0, hint);
        } else if (e0 < limit.end) {
          out[k] = vec::load(row + e0, hint);
        } else {
#pragma unroll
          for (int i = 0; i < vec::words; ++i) out[k].w[i] = vec::fill_word(fill);
        }
      } else if (defers_ragged<T, N> || (vec::per_word == 2 && (e0 + V <= 0 || e0 >= w.cols))) {
        // 4-byte windows wholly outside the row take the word-by-word branch below, whose
        // loads are then all predicated off: a branch of their own here slows the fp32
        // register clusters (tuning log, row I/O and ragged windows).
#pragma unroll
        for (int i = 0; i < vec::words; ++i) out[k].w[i] = vec::fill_word(fill);
      } else {
#pragma unroll
        for (int i = 0; i < vec::words; ++i) {
          const std::int64_t lo = e0 + i * vec::per_word, hi = lo + vec::per_word - 1;
          const std::int64_t end = read_end(w, limit);
          const bool lo_in = lo >= 0 && lo < end, hi_in = hi >= 0 && hi < end;
          if (lo_in && hi_in) {
            out[k].w[i] = *reinterpret_cast<typename vec::word const*>(row + lo);
          } else if (lo_in || hi_in) {  // 16-bit only: the one element, completed by finish
            out[k].w[i] = *reinterpret_cast<std::uint16_t const*>(row + (lo_in ? lo : hi));
          } else {
            out[k].w[i] = vec::fill_word(fill);
          }
        }
      }
    }
  }
}

/// Puts `fill` in the elements at or past `end` of the window that holds `end`, where it is one
/// of N windows (load_windows' geometry, `Hint` as there): a select a word (an indexed store
/// would move the fragment to local memory). The windows past it load_windows and
/// finish_windows left `fill` under read_limit{end}.
template <class Hint = no_hint, class T, int V, int N>
__device__ inline void fill_past(row_window const& w, std::int64_t end, T fill,
                                 vec_t<T, V> (&out)[N]) {
  using vec = vec_t<T, V>;
  using word = typename vec::word;
  const word f = vec::fill_word(fill);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const std::int64_t left = end - first_element<V, Hint>(w, k);
    if (left > 0 && left < V) {
      const int kept = static_cast<int>(left);  // lanes before `end`
#pragma unroll
      for (int i = 0; i < vec::words; ++i) {
        const int lo = i * vec::per_word;
        if constexpr (vec::per_word == 1) {
          out[k].w[i] = lo < kept ? out[k].w[i] : f;
        } else {
          const word x = out[k].w[i];
          out[k].w[i] = lo + 1 < kept ? x : lo < kept ? (x & 0xffffu) | (f & 0xffff0000u) : f;
        }
      }
    }
  }
}

/// Completes what `load_windows` left of a row's ragged windows. Where defers_ragged: reads the
/// windows the row covers in part (ragged_of), element by element, `fill` outside the row.
/// Elsewhere, 16-bit rows only: moves each element read alone into its half of the word, `fill`
/// in the other (only the row's first element, at an odd shift, and its last, at an even place
/// in the window grid, share a word with elements outside the row). Nothing to do for 4-byte
/// rows, nor for rows in a shared-memory tile (load_tile_windows reads them whole).
///
/// `limit`: as load_windows' (the ragged windows read up to it).
template <class T, int V, int N, class Hint = no_hint, class Limit = no_limit>
__device__ inline void finish_windows(T const* row, row_window const& w, T fill,
                                      vec_t<T, V> (&out)[N], Hint = {}, Limit limit = {}) {
  if constexpr (std::is_same_v<Hint, in_tile>) {
  } else if constexpr (!defers_ragged<T, N>) {
    using vec = vec_t<T, V>;
    if constexpr (vec::per_word == 2) {
      if (w.cols <= 0) return;
      const std::uint32_t f = bits_as<std::uint16_t>(fill);
      if (w.shift % 2 == 1 && w.first == 0) {  // element 0: the high half of word shift / 2
#pragma unroll
        for (int i = 0; i < vec::words; ++i) {
          const std::uint32_t x = out[0].w[i];
          out[0].w[i] = i == w.shift / 2 ? (x << 16) | f : x;
        }
      }
      const std::int64_t last = w.cols - 1 + w.shift;  // the last element's place in the grid
      const std::int64_t d = last / V - w.first;       // its window, from this thread's first
      if (last % 2 == 0 && d >= 0 && d % w.stride == 0 && d / w.stride < N) {
        // A select for every word: an indexed store would move the fragment to local memory.
        const int at = static_cast<int>(d / w.stride) * vec::words + static_cast<int>(last % V) / 2;
#pragma unroll
        for (int j = 0; j < N; ++j)
#pragma unroll
          for (int i = 0; i < vec::words; ++i) {
            const std::uint32_t x = out[j].w[i];
            out[j].w[i] = j * vec::words + i == at ? (x & 0xffffu) | (f << 16) : x;
          }
      }
    }
  } else {
    const ragged_slots r = ragged_of<V, N>(w);
    const std::int64_t end = read_end(w, limit);
    if (r.head == 0) out[0] = load_ragged<T, V>(row, -std::int64_t{w.shift}, end, fill);
    if (r.tail >= 0) {
      // Moved to its slot by selects: an indexed store would move the fragment to local memory.
      const vec_t<T, V> t = load_ragged<T, V>(row, r.tail_e0, end, fill);
#pragma unroll
      for (int k = 0; k < N; ++k)
        if (k == r.tail) out[k] = t;
    }
  }
}

/// `finish_windows` for the rows of two tensors of one geometry `w` (backward_op's dy and y):
/// where deferred, a thread that holds a ragged window issues the reads of both tensors' before
/// it places any, in one branch that the other threads skip; the windows are read word by word
/// (read_ragged, a word wholly in the row one 32-bit load), which holds four windows in half
/// the registers of elements. Finished one tensor after the other, the first tensor's placing
/// would wait for its reads before the second's are issued, a memory latency more for the
/// thread and so for its CTA's row or cluster; branch-free, the reads and their selects in every
/// thread would cost the aligned rows as much (tuning log, row I/O and ragged windows).
template <class T, int V, int N, class Hint = no_hint, class Limit = no_limit>
__device__ inline void finish_windows(T const* row0, T const* row1, row_window const& w, T fill,
                                      vec_t<T, V> (&out0)[N], vec_t<T, V> (&out1)[N],
                                      Hint hint = {}, Limit limit = {}) {
  if constexpr (!defers_ragged<T, N> || std::is_same_v<Hint, in_tile>) {
    finish_windows(row0, w, fill, out0, hint, limit);
    finish_windows(row1, w, fill, out1, hint, limit);
  } else {
    const ragged_slots r = ragged_of<V, N>(w);
    if (r.head == 0 || r.tail >= 0) {
      const lanes none{0, 0};
      const std::int64_t h0 = -std::int64_t{w.shift};
      const std::int64_t end = read_end(w, limit);
      const lanes h = r.head == 0 ? lanes_in_row<V>(h0, end) : none;
      const lanes t = r.tail >= 0 ? lanes_in_row<V>(r.tail_e0, end) : none;
      const ragged_read<T, V> h0r = read_ragged<T, V>(row0, h0, h, fill);
      const ragged_read<T, V> t0r = read_ragged<T, V>(row0, r.tail_e0, t, fill);
      const ragged_read<T, V> h1r = read_ragged<T, V>(row1, h0, h, fill);
      const ragged_read<T, V> t1r = read_ragged<T, V>(row1, r.tail_e0, t, fill);
      if (r.head == 0) {
        out0[0] = packed(h0r, fill);
        out1[0] = packed(h1r, fill);
      }
      // Moved to its slot by selects: an indexed store would move the fragment to local memory.
      const vec_t<T, V> t0 = packed(t0r, fill), t1 = packed(t1r, fill);
#pragma unroll
      for (int k = 0; k < N; ++k)
        if (k == r.tail) {
          out0[k] = t0;
          out1[k] = t1;
        }
    }
  }
}

/// Writes the elements [e0, e0 + L) of a row of `cols` elements that lie in it: one vector store
/// (vec_t::store, with `hint`) where all do, else element by element. For ops whose output type
/// is not their input's, which store each window as they make it (a 16-bit row's windows of
/// floats made all before the first store would double its registers).
template <class T, int L, class Hint = no_hint>
__device__ inline void store_part(T* row, std::int64_t e0, std::int64_t cols, vec_t<T, L> const& v,
                                  Hint hint = {}) {
  static_assert(!std::is_same_v<Hint, in_tile>, "global memory");
  if (e0 >= 0 && e0 + L <= cols) {
    if constexpr (std::is_same_v<Hint, l2_hint>) {
      v.store(row + e0, hint);
    } else {
      v.store(row + e0);
    }
  } else if (e0 < cols && e0 + L > 0) {
    store_ragged(row, e0, cols, v);
  }
}

/// Writes the in-range elements of N windows; the same geometry as `load_windows`. A whole
/// window is one vector store: `OneStore` writes it with vec_t::store, for the kernels where
/// the compiler splits the plain assignment into one store a word (the split kernel); elsewhere
/// the plain assignment compiles to one store and leaves the compiler freer to schedule. A
/// whole window's store carries `hint` (see l2_hint); a window the row covers in part is
/// written element by element (store_ragged), in its slot's branch: the stores wait for no
/// one, and a branch a slot keeps the fragment's registers as they are (selecting the tail into
/// one vector first, as `finish_windows` does, spilled the 16-bit forward kernels of 144 bytes
/// a thread; ptxas, sm_90).
template <bool OneStore = false, class T, int V, int N, class Hint = no_hint>
__device__ inline void store_windows(T* row, row_window const& w, vec_t<T, V> const (&in)[N],
                                     Hint hint = {}) {
  if constexpr (std::is_same_v<Hint, in_tile>) {
    store_tile_windows(row, w, in);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const std::int64_t e0 = (w.first + std::int64_t{k} * w.stride) * V - w.shift;
      if (e0 >= 0 && e0 + V <= w.cols) {
        if constexpr (std::is_same_v<Hint, l2_hint>) {
          in[k].store(row + e0, hint);
        } else if constexpr (OneStore) {
          in[k].store(row + e0);
        } else {
          *reinterpret_cast<vec_t<T, V>*>(row + e0) = in[k];
        }
      } else if (defers_ragged<T, N>) {
        if (e0 < w.cols && e0 + V > 0) store_ragged(row, e0, w.cols, in[k]);
      } else {
#pragma unroll
        for (int l = 0; l < V; ++l) {
          const std::int64_t e = e0 + l;
          if (e >= 0 && e < w.cols) row[e] = in[k].get(l);
        }
      }
    }
  }
}

}  // namespace rowsoftmax::detail
