// SPDX-License-Identifier: Apache-2.0
// The kernel skeletons, written once for every op (forward, backward) and configuration:
//   resident_kernel  - a row (or several) held in registers: read once, one exchange, store.
//                      In a clustered configuration the row spans the CTAs of a cluster (sm_90).
//   tiled_kernel     - short contiguous rows: a CTA's rows copied into shared memory in 16-byte
//                      vectors, held from there as resident_kernel holds them, copied out.
//   streaming_kernel - rows longer than the registers of a cluster: pass 1 streams the CTA's
//                      share of the row in tiles into a partial, keeping what fits on chip
//                      (the last tile in registers, more in shared memory), one exchange, pass 2
//                      stores the tiles, reading again those not kept (see tile_share).
//   split_kernel     - a row's tiles shared by many CTAs that meet through a workspace, each
//                      CTA keeping its share in registers and shared memory between the passes
//                      (what does not fit is read again).
//   staged_kernel    - forward: a row copied into the shared memory of a cluster's CTAs, reduced
//                      and normalized from there (sm_90).
//   staged_split_kernel - forward: a row copied into the shared memory of many CTAs that meet
//                      through a workspace, as split_kernel (sm_90).
#pragma once

#include <cuda/atomic>
#include <cuda/ptx>

#include <nv/target>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../plan.hpp"
#include "exchange.cuh"
#include "math.cuh"
#include "row_io.cuh"

/// Kernels in a header are templates (no ODR clash) with hidden visibility, so two shared
/// libraries that both include this header keep their own copies.
#if defined(__GNUC__)
#define ROWSOFTMAX_KERNEL __global__ __attribute__((visibility("hidden")))
#else
#define ROWSOFTMAX_KERNEL __global__
#endif

namespace rowsoftmax::detail {

/// The direction a row op computes: forward holds one input tensor, backward two.
template <class Op>
inline constexpr direction direction_of =
    Op::tensors == 1 ? direction::forward : direction::backward;

/// What a kernel of a cluster configuration (register cluster, streaming, staged) is told of its
/// clusters, CTAs along x.
struct cluster_arg {
  int size;                   ///< CTAs a cluster (1: none)
  int share;                  ///< register cluster, staged: windows of a row a CTA holds
                              ///< (share_windows)
  exact_divisor per_cluster;  ///< `size`, to divide blockIdx.x by
};

/// A CTA's rank in its cluster, and the cluster's index in the one-dimensional grid of clusters,
/// without a division: the rank from its special register, the index an exact division by the
/// cluster size (exact_divisor). Divided out of blockIdx.x, row and rank waited for the SM's
/// special-function unit before the CTA issued its loads (2-4 points of copy bandwidth at the
/// 16-bit staged and fp32 register cluster rows on the H200), and %clusterid.x compiles to a
/// float multiply and a conversion that waits there too (benchmarks/TUNING.md, note 50). Before
/// sm_90 every CTA is its own cluster.
__device__ inline int cluster_rank() {
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90,
                    (return static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());), (return 0;))
}
__device__ inline unsigned cluster_index(cluster_arg const& c) {
  return c.per_cluster.divide(blockIdx.x - static_cast<unsigned>(cluster_rank()));
}

/// An empty kernel, launched by no one: the occupancy of its clusters at two CTAs an SM is the
/// device's (query_cluster_fill, dispatch.cuh).
template <int MaxThreads>
ROWSOFTMAX_KERNEL void __launch_bounds__(MaxThreads) cluster_fill_kernel() {}

template <class Op, int V, int Config>
struct kernel_shape {
  static constexpr kernel_config config = kernel_configs[Config];
  static constexpr int threads_per_row = config.threads_per_row;
  static constexpr int threads_per_cta = config.threads_per_cta;
  static constexpr int rows_per_thread = config.rows_per_thread;
  static constexpr int slots = slots_per_thread(config, V, sizeof(typename Op::value_type));
  static constexpr int lanes = threads_per_row < 32 ? threads_per_row : 32;
  static constexpr int warps_per_row = threads_per_row / lanes;
  using exchange = row_exchange<typename Op::reduce, lanes, threads_per_cta, config.clustered>;
  using fragment = typename Op::template fragment<V, slots>;
  static_assert(V == 16 / sizeof(typename Op::value_type) || (V == 1 && config.scalar_ok),
                "vector width: 16 bytes, or the scalar fallback where configured");
  static_assert(rows_per_thread == 1 || (threads_per_row < 32 && !config.clustered),
                "several rows a thread: sub-warp rows (shuffles alone), one CTA");
  static_assert(slots >= 1 && (V * slots * sizeof(typename Op::value_type)) % 16 == 0);
  // Registers: the row data a thread holds plus a slack of 48 (ctas_per_sm; 44 for 16-bit forward
  // CTAs of 80 bytes a thread, four an SM), so that 256-thread CTAs of one-tensor rows (32 data
  // registers) keep 3 CTAs an SM and of two-tensor rows 2 (and 16-bit forward split CTAs, which
  // count their data twice for their register tile, 2). Without a
  // bound, 16-bit rows were scheduled into ~110 registers (all exps of a thread in flight);
  // slacks of 32 and of none measured worse (benchmarks/TUNING.md).
  // Except two-tensor rows of at most a warp: unbounded (167 registers for 16-bit, fewer CTAs)
  // they ran at 101% of copy on the H200, bounded (128) at 80-84% (benchmarks/TUNING.md).
  static constexpr bool unbounded = Op::tensors == 2 && threads_per_row <= 32;
  static constexpr int min_ctas_per_sm =
      unbounded ? 1 : ctas_per_sm(config, Op::tensors, sizeof(typename Op::value_type));
};

/// The rows a CTA holds in registers, `Shape::rows_per_thread` of them a thread: every row's
/// loads issued first, then each row reduced (one exchange) and stored. `window(j)` is the
/// thread's window of its row j (the same for its loads, their finish and its store); `where`
/// says where the rows are (no_hint: global memory, in_tile: a shared-memory tile, every thread
/// of the CTA calling).
template <class Op, class Shape, class Window, class Where = no_hint>
__device__ inline void hold_rows(typename Op::args const& a, Window const& window,
                                 typename Shape::exchange::storage& smem, int cluster,
                                 Where where = {}) {
  constexpr int rows = Shape::rows_per_thread;
  typename Shape::fragment f[rows];
#pragma unroll
  for (int j = 0; j < rows; ++j) Op::issue(a, window(j), f[j], where);
#pragma unroll
  for (int j = 0; j < rows; ++j) Op::finish(a, window(j), f[j], where);
  // A tile's rows are written in place, and a window read there covers words of the next row
  // (its elements masked): every read done before any write.
  if constexpr (std::is_same_v<Where, in_tile>) __syncthreads();
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const partial total =
        Shape::exchange::allreduce(Op::fold(f[j]), smem, Shape::warps_per_row, cluster);
    Op::store(a, window(j), f[j], total, where);
  }
}

template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    resident_kernel(typename Op::args const a, cluster_arg const c) {
  using shape = kernel_shape<Op, V, Config>;
  constexpr int tpr = shape::threads_per_row;
  const int cluster = shape::config.clustered ? c.size : 1;
  __shared__ typename shape::exchange::storage smem;
  shape::exchange::begin(smem, shape::warps_per_row, cluster);

  // Row j of the thread (several for short rows): rows_per_pass consecutive rows a CTA for each
  // j, so that a warp's accesses to its j-th rows are contiguous where the rows are.
  constexpr int rows = shape::rows_per_thread;
  constexpr int rows_per_pass = shape::threads_per_cta / tpr;
  const int cta_rank = shape::config.clustered ? cluster_rank() : 0;
  const std::int64_t row0 =
      std::int64_t{shape::config.clustered ? cluster_index(c) : blockIdx.x} * rows_per_pass * rows +
      threadIdx.x / tpr;
  // The thread's window of its row j: one expression for its loads, their finish and its store.
  auto window = [&](int j) {
    row_window w = Op::template window<V>(a, row0 + j * rows_per_pass, threadIdx.x % tpr, tpr);
    if constexpr (shape::config.clustered) {
      // Equal shares: CTA r owns windows [r * n, (r + 1) * n), n = c.share the widest row's
      // windows over the CTAs (share_windows), so every CTA is equally busy.
      w.first += std::int64_t{cta_rank} * c.share;
      const std::int64_t end = std::int64_t{cta_rank + 1} * c.share * V - w.shift;
      w.cols = end < w.cols ? end : w.cols;
    }
    return w;
  };
  hold_rows<Op, shape>(a, window, smem, cluster);
}

/// Short rows that follow each other in every tensor (row_layout::contiguous), at any alignment:
/// a CTA's rows are one span of each tensor, copied into a shared-memory tile in 16-byte vectors
/// (element-wise at the span's two ends only; the tile keeps the span's alignment), held and
/// reduced from there as resident_kernel holds rows, in windows from each row's start whatever
/// its alignment (in_tile), normalized in place over the first input's tile and copied out the
/// same way.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    tiled_kernel(typename Op::args const a) {
  using shape = kernel_shape<Op, V, Config>;
  using T = typename Op::value_type;
  using vec = vec_t<T, V>;
  constexpr int tpr = shape::threads_per_row, threads = shape::threads_per_cta;
  constexpr int rows = shape::rows_per_thread, rows_per_pass = threads / tpr;
  // A tile's vectors, `rows` + 1 a thread: a CTA's rows hold at most threads * rows windows
  // (row_windows), so their span, at any alignment, at most one vector more, and the last
  // row's last window reads at most a word past it.
  constexpr int slots = rows + 1;
  static_assert(shape::slots == 1 && sizeof(vec) == 16);
  __shared__ typename shape::exchange::storage smem;
  __shared__ uint4 tile[Op::tensors][threads * slots];
  shape::exchange::begin(smem, shape::warps_per_row, 1);

  const std::int64_t row0 = std::int64_t{blockIdx.x} * rows_per_pass * rows;
  const std::int64_t left = a.rows - row0;
  const std::int64_t held = left < rows_per_pass * rows ? left : rows_per_pass * rows;
  // Tensor t's span as one row of held * cols elements, consecutive threads on consecutive
  // vectors; the tile's vector k is the span's window k.
  auto span = [&](T const* p) {
    return row_window{0, held * a.cols, threadIdx.x, threads, head_of<V>(p + row0 * a.cols)};
  };
  {
    const T zero = from_float<T>(0.0f);  // (the tile's elements outside the span: never used)
    vec in[Op::tensors][slots];
#pragma unroll
    for (int t = 0; t < Op::tensors; ++t) {
      T const* p = Op::input(a, t);
      load_windows(p + row0 * a.cols, span(p), zero, in[t]);
    }
#pragma unroll
    for (int t = 0; t < Op::tensors; ++t) {
      T const* p = Op::input(a, t);
      finish_windows(p + row0 * a.cols, span(p), zero, in[t]);
#pragma unroll
      for (int k = 0; k < slots; ++k)
        *reinterpret_cast<vec*>(&tile[t][threadIdx.x + k * threads]) = in[t][k];
    }
  }
  __syncthreads();
  T* tiles[Op::tensors];
#pragma unroll
  for (int t = 0; t < Op::tensors; ++t)
    tiles[t] = reinterpret_cast<T*>(tile[t]) + span(Op::input(a, t)).shift;
  const typename Op::args on_tile = Op::on_tiles(a, tiles, held);
  auto window = [&](int j) {
    row_window w = Op::template window<V>(on_tile, j * rows_per_pass + threadIdx.x / tpr,
                                          threadIdx.x % tpr, tpr);
    w.shift = 0;  // windows from the row's start (in_tile)
    return w;
  };
  hold_rows<Op, shape>(on_tile, window, smem, 1, in_tile{});
  __syncthreads();
  // The output's rows are aligned as the inputs' (row_layout: equal heads): its span's window k
  // is the first tile's vector k.
  vec out[slots];
#pragma unroll
  for (int k = 0; k < slots; ++k)
    out[k] = *reinterpret_cast<vec const*>(&tile[0][threadIdx.x + k * threads]);
  store_windows(Op::output(a) + row0 * a.cols, span(Op::output(a)), out);
}

/// A thread's fragment in a streaming or split CTA's stash: 16-byte words, word q of thread i of
/// tile k at [(k * quads + q) * threads + i] (consecutive threads, consecutive words: no bank
/// conflicts).
template <class Fragment, int Threads, int StrideBytes>
struct stash {
  static constexpr int quads = (static_cast<int>(sizeof(Fragment)) + 15) / 16;
  static constexpr int stride = StrideBytes / 16;  // quads a thread a tile (plan.hpp's size)
  static_assert(sizeof(Fragment) % 4 == 0 && quads <= stride,
                "a fragment fits the stash tile size the planner assumes");

  __device__ static void put(uint4* base, int k, Fragment const& f) {
    std::uint32_t w[quads * 4] = {};
    memcpy(w, &f, sizeof(Fragment));
#pragma unroll
    for (int q = 0; q < quads; ++q)
      base[(k * stride + q) * Threads + threadIdx.x] =
          make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
  }

  __device__ static void get(uint4 const* base, int k, Fragment& f) {
    std::uint32_t w[quads * 4];
#pragma unroll
    for (int q = 0; q < quads; ++q) {
      const uint4 v = base[(k * stride + q) * Threads + threadIdx.x];
      w[4 * q] = v.x;
      w[4 * q + 1] = v.y;
      w[4 * q + 2] = v.z;
      w[4 * q + 3] = v.w;
    }
    memcpy(&f, w, sizeof(Fragment));
  }
};

/// A CTA's share of a row, tiles [t0, t1) of `tile` windows, in the two passes of the streaming
/// and split kernels. `load` reads each tile into `f` and folds it into the CTA's partial,
/// keeping the first `stash_tiles` in shared memory, the dy of the next `halves` there too
/// (backward, plan::stash_halves) and the last in registers (see keeps_last_tile);
/// `store`, given the row's total, writes them last first: the last from registers, the stashed
/// ones from shared memory (the half tiles' y read again), the others read again (the most
/// recently read first, so that they come from L2; in the split kernel, with L2 hints where
/// needed, see `hinted`).
template <class Op, int V, int Config>
struct tile_share {
  using shape = kernel_shape<Op, V, Config>;
  using reduce = typename Op::reduce;
  using fragment = typename shape::fragment;
  static constexpr int tpr = shape::threads_per_row;
  static_assert(tpr == shape::threads_per_cta, "one row per CTA");
  static constexpr std::int64_t tile = std::int64_t{tpr} * shape::slots;  // windows per tile
  using kept =
      stash<fragment, tpr, static_cast<int>(stash_tile_bytes(shape::config, Op::tensors) / tpr)>;
  /// Half tile k of a two-tensor op's stash (Op::kept_half: dy), after its `stash_tiles` whole
  /// tiles: put or get.
  template <bool Put, class Word>
  __device__ static void half(Word* stashed, int stash_tiles, int k, fragment& f) {
    static_assert(Op::tensors == 2, "half tiles: backward");
    auto& h = Op::kept_half(f);
    using halves = stash<std::remove_reference_t<decltype(h)>, tpr,
                         static_cast<int>(stash_half_bytes(shape::config) / tpr)>;
    Word* const base = stashed + std::int64_t{stash_tiles} * kept::stride * tpr;
    if constexpr (Put) {
      halves::put(base, k, h);
    } else {
      halves::get(base, k, h);
    }
  }
  static constexpr bool keep_last =
      keeps_last_tile(shape::config, Op::tensors, sizeof(typename Op::value_type));

  /// Whether a split CTA's share of `tiles` tiles takes L2 hints: rows of hints_second_reads
  /// (hinted_split_config, fp32 forward) that read tiles other than their register tile twice. The
  /// first loads of those evict last and every other load and store of the share evicts first, so
  /// that L2 keeps them for their second read (which evicts first, so that no line is left to evict
  /// last after the kernel). On the H200 (rows*cols = 2^27) fp32 forward 2^24 columns ran at 72% of
  /// copy against 66%, fp32 backward 2^23 at 74.5% against 69%. Hinted, rows that read no tile
  /// twice, or only the last they load (16-bit forward before it kept a register tile, whose kernel
  /// also spilled so), ran 1-3.5 points slower, and streaming rows up to 5; 16-bit backward rows
  /// 2^24 gained 4.5 points, but the hinted copy of the loops doubled the kernel's code and its
  /// rows of 2^20-2^23 columns, not hinted, lost 0.5-3.5 (benchmarks/TUNING.md, note 45): backward
  /// and 16-bit forward rows whose shares read tiles twice take a configuration of their own
  /// (hinted_split_config).
  static constexpr bool hintable =
      hints_second_reads(shape::config, direction_of<Op>, sizeof(typename Op::value_type), V);
  __device__ static bool hinted(std::int64_t tiles, int stash_tiles) {
    return hintable && tiles > stash_tiles + 1;
  }
  /// A tile's load, hinted (`again`: a tile read twice) or plain.
  template <bool hints>
  __device__ static void load_tile(typename Op::args const& a, row_window const& w, fragment& f,
                                   bool again) {
    if constexpr (hints) {
      Op::load(a, w, f, l2_hint::make(again ? l2_hint::last : l2_hint::first));
    } else {
      Op::load(a, w, f);
    }
  }
  /// A tile's store, hinted or plain.
  template <bool OneStore, bool hints>
  __device__ static void store_tile(typename Op::args const& a, row_window const& w,
                                    fragment const& f, partial total) {
    if constexpr (hints) {
      Op::template store<OneStore>(a, w, f, total, l2_hint::make(l2_hint::first));
    } else {
      Op::template store<OneStore>(a, w, f, total);
    }
  }

  /// Tiles of the row `w` covers.
  __device__ static std::int64_t tiles(row_window const& w) {
    return ceil_div(windows_of<V>(w), tile);
  }

  /// The first tile of CTA `rank`'s share when `ctas` CTAs share `tiles` tiles; CTA r takes
  /// [first(r), first(r + 1)), so shares differ by at most one tile.
  __device__ static std::int64_t first(std::int64_t tiles, int rank, int ctas) {
    return tiles * rank / ctas;
  }

  /// `load`, with L2 hints where `Hints` (the split kernel) and the share takes them (see
  /// `hinted`): one loop for each, so that the plain one is the code that ran without hints.
  template <bool Hints>
  __device__ static partial load(typename Op::args const& a, row_window& w, std::int64_t t0,
                                 std::int64_t t1, int stash_tiles, int halves, fragment& f,
                                 uint4* stashed) {
    if constexpr (Hints && hintable) {
      if (hinted(t1 - t0, stash_tiles))
        return load_tiles<true>(a, w, t0, t1, stash_tiles, halves, f, stashed);
    }
    return load_tiles<false>(a, w, t0, t1, stash_tiles, halves, f, stashed);
  }
  template <bool hints>
  __device__ static partial load_tiles(typename Op::args const& a, row_window& w, std::int64_t t0,
                                       std::int64_t t1, int stash_tiles, int halves, fragment& f,
                                       uint4* stashed) {
    partial acc = reduce::identity();
    for (std::int64_t t = t0; t < t1; ++t) {
      w.first = t * tile + threadIdx.x;
      if constexpr (Op::tensors == 2) {
        if (t - t0 >= stash_tiles && t - t0 < stash_tiles + halves && !(keep_last && t == t1 - 1)) {
          // dy kept, y read again
          if constexpr (hints) {
            Op::load(a, w, f, l2_hint::make(l2_hint::first), l2_hint::make(l2_hint::last));
          } else {
            Op::load(a, w, f);
          }
          half<true>(stashed, stash_tiles, static_cast<int>(t - t0) - stash_tiles, f);
          acc = reduce::combine(acc, Op::fold(f));
          continue;
        }
      }
      load_tile<hints>(a, w, f, t - t0 >= stash_tiles && !(keep_last && t == t1 - 1));
      if (t - t0 < stash_tiles && !(keep_last && t == t1 - 1))
        kept::put(stashed, static_cast<int>(t - t0), f);
      acc = reduce::combine(acc, Op::fold(f));
    }
    return acc;
  }

  /// `store`, hinted as `load`; tiles that start before window `skip` are not stored (those the
  /// split kernel's workspace covers in the output, see split_workspace::skip_windows).
  template <bool OneStore, bool Hints>
  __device__ static void store(typename Op::args const& a, row_window& w, std::int64_t t0,
                               std::int64_t t1, int stash_tiles, int halves, fragment& f,
                               uint4 const* stashed, partial total, int skip = 0) {
    if constexpr (Hints && hintable) {
      if (hinted(t1 - t0, stash_tiles))
        return store_tiles<OneStore, true>(a, w, t0, t1, stash_tiles, halves, f, stashed, total,
                                           skip);
    }
    store_tiles<OneStore, false>(a, w, t0, t1, stash_tiles, halves, f, stashed, total, skip);
  }
  template <bool OneStore, bool hints>
  __device__ static void store_tiles(typename Op::args const& a, row_window& w, std::int64_t t0,
                                     std::int64_t t1, int stash_tiles, int halves, fragment& f,
                                     uint4 const* stashed, partial total, int skip) {
    for (std::int64_t t = t1 - 1; t >= t0; --t) {
      w.first = t * tile + threadIdx.x;
      if (!keep_last || t < t1 - 1) {  // else the last tile is still in registers, folded
        if (t - t0 < stash_tiles) {
          kept::get(stashed, static_cast<int>(t - t0), f);
        } else if (Op::tensors == 2 && t - t0 < stash_tiles + halves) {
          if constexpr (Op::tensors == 2) {
            half<false>(stashed, stash_tiles, static_cast<int>(t - t0) - stash_tiles, f);
            if constexpr (hints) {
              Op::load_other_half(a, w, f, l2_hint::make(l2_hint::first));
            } else {
              Op::load_other_half(a, w, f);
            }
          }
        } else {
          load_tile<hints>(a, w, f, false);
        }
        Op::fold(f);
      }
      if (t * tile >= skip) store_tile<OneStore, hints>(a, w, f, total);
    }
  }

  /// One pass of a split CTA between two meetings: stores this row's share `c` (tiles
  /// [c0, c1), given its `total`; its last tile in `f` where keeps_last_tile) and loads the next
  /// row's share `n` (tiles [n0, n1), none past the last row), returning the next row's partial
  /// and leaving its last tile in `f`. The two are interleaved, a tile stored then a tile loaded:
  /// this row's register tile, then its tiles read again (the most recently read first, as
  /// `store`), then its stashed tiles; the next row's loads start as the first stashed tile is
  /// stored, each stashed tile taking the slot just read, then the tiles read again, the register
  /// tile last (as `load`). On the H200 this pass ran forward rows 1-3.5 points faster than
  /// `load` and `store` as separate passes, backward rows up to 5 slower; storing every tile
  /// before the first load measured the same as interleaving (benchmarks/TUNING.md, note 44).
  /// Hinted where either row's share takes hints (see `load`), tile by tile (a loop for each
  /// spilled the fp32 kernel). Tiles of row 0 that start before window `skip` are not stored
  /// (see `store`).
  template <bool OneStore>
  __device__ static partial pass(typename Op::args const& a, std::int64_t c_row, std::int64_t c0,
                                 int c_tiles, std::int64_t n_row, std::int64_t n0, int n_tiles,
                                 int stash_tiles, fragment& f, uint4* stashed, partial total,
                                 int skip) {
    const bool hints = hinted(c_tiles, stash_tiles) || hinted(n_tiles, stash_tiles);
    auto load_one = [&](row_window const& w, bool again) {
      if (hints) {
        load_tile<true>(a, w, f, again);
      } else {
        load_tile<false>(a, w, f, again);
      }
    };
    auto store_one = [&](row_window const& w) {
      if (c_row == 0 && w.first - threadIdx.x < skip) return;
      if (hints) {
        store_tile<OneStore, true>(a, w, f, total);
      } else {
        store_tile<OneStore, false>(a, w, f, total);
      }
    };
    // Tile t of a row's window, built where used (kept across the loop, the two rows' windows
    // spilled the fp32 forward kernel).
    auto at = [&](std::int64_t row, std::int64_t t) {
      return Op::template window<V>(a, row, t * tile + threadIdx.x, tpr);
    };
    const int kc = keep_last && c_tiles > 0 ? 1 : 0, kn = keep_last && n_tiles > 0 ? 1 : 0;
    if (kc) store_one(at(c_row, c0 + c_tiles - 1));
    const int lc = c_tiles - kc;  // this row's tiles stored in the loop
    const int sc = min(lc, stash_tiles), rc = lc - sc;
    const int sn = min(n_tiles - kn, stash_tiles);
    const int steps = max(lc, rc + n_tiles);
    partial acc = reduce::identity();
    for (int j = 0; j < steps; ++j) {
      if (j < lc) {
        const int slot = j - rc;
        const std::int64_t t = c0 + (j < rc ? lc - 1 - j : slot);
        if (j < rc) {
          load_one(at(c_row, t), false);
        } else {
          kept::get(stashed, slot, f);
        }
        Op::fold(f);
        store_one(at(c_row, t));
      }
      const int i = j - rc;  // the next row's tile, from its first
      if (i >= 0 && i < n_tiles) {
        load_one(at(n_row, n0 + i), i >= sn && i != n_tiles - kn);
        if (i < sn) kept::put(stashed, i, f);
        acc = reduce::combine(acc, Op::fold(f));
      }
    }
    return acc;
  }
};

template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    streaming_kernel(typename Op::args const a, cluster_arg const c, int const stash_tiles,
                     int const stash_halves) {
  using shape = kernel_shape<Op, V, Config>;
  using share = tile_share<Op, V, Config>;
  const int cluster = shape::config.clustered ? c.size : 1;
  __shared__ typename shape::exchange::storage smem;
  extern __shared__ uint4 stashed[];
  shape::exchange::begin(smem, shape::warps_per_row, cluster);

  const int cta_rank = shape::config.clustered ? cluster_rank() : 0;
  row_window w = Op::template window<V>(
      a, std::int64_t{shape::config.clustered ? cluster_index(c) : blockIdx.x}, 0, share::tpr);
  const std::int64_t tiles = share::tiles(w);
  const std::int64_t t0 = share::first(tiles, cta_rank, cluster);
  const std::int64_t t1 = share::first(tiles, cta_rank + 1, cluster);

  typename shape::fragment f;
  const partial acc =
      share::template load<false>(a, w, t0, t1, stash_tiles, stash_halves, f, stashed);
  const partial total = shape::exchange::allreduce(acc, smem, shape::warps_per_row, cluster);
  share::template store<false, false>(a, w, t0, t1, stash_tiles, stash_halves, f, stashed, total);
}

/// A CTA's partial in a split workspace: each float in the low half of a word of 8 bytes whose
/// high half is the tag of the meeting that wrote it (its iteration + 1; the launcher zeroes the
/// workspace), so that a reader that sees the tag sees the float with it (one single-copy atomic
/// access), with no fence between the partial and its arrival.
struct tagged_partial {
  std::uint64_t m;
  std::uint64_t s;
};

/// Where the CTAs of a split launch meet: per row group, an arrival counter (zero before the
/// launch) and three sets of partials, one per CTA of the group (see meeting_slots).
struct split_workspace {
  unsigned* counters;
  tagged_partial* partials;
  int row_groups;
  int split_ctas;
  int stash_tiles;   ///< tiles a CTA keeps in its dynamic shared memory
  int share;         ///< staged split: windows of a row each CTA holds (see share_windows)
  int skip_windows;  ///< the workspace in the output (plan::workspace_in_output): windows of
                     ///< row 0 it covers, which the split kernels leave to held_back_kernel;
                     ///< else 0
  int stash_halves;  ///< backward: tiles of which a CTA keeps dy alone in its dynamic shared
                     ///< memory, after its `stash_tiles` (plan::stash_halves)
};

/// The partials of a split group's meeting (`n` of them at `slots`, tagged `tag`: see
/// tagged_partial) folded in the same order in every CTA, so that every thread of the CTA gets
/// the row's total, bitwise the same in every CTA (past L1, in one batch of loads, each partial
/// read again until it carries the tag): with `AllThreads`, every thread of the `Threads` reads
/// a partial or two and the CTA reduces them through `Exchange` (the split kernel: its SM idles
/// while the group meets, and the latency of the reads is what counts); else the fewest warps
/// that read four partials a lane fold them and every thread folds those warps' partials from
/// `smem`, which holds them until the caller's next __syncthreads (the staged split: the SM's
/// other CTAs issue an instruction most cycles). (Warp 0 alone read a few hundred partials in as
/// many batches as it took 128 of them; benchmarks/TUNING.md.)
template <class Exchange, int Threads, bool AllThreads>
__device__ inline partial gather(tagged_partial* slots, int n, std::uint32_t tag,
                                 typename Exchange::storage& smem) {
  using reduce = typename Exchange::reduce;
  using word = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>;
  // Partial i, read again until it carries the tag, folded into q.
  auto fold = [&](partial q, int i, std::uint64_t m, std::uint64_t s) {
    while ((m >> 32) != tag) m = word(slots[i].m).load(cuda::memory_order_relaxed);
    while ((s >> 32) != tag) s = word(slots[i].s).load(cuda::memory_order_relaxed);
    return reduce::combine(q, partial{bits_as<float>(static_cast<std::uint32_t>(m)),
                                      bits_as<float>(static_cast<std::uint32_t>(s))});
  };
  partial q = reduce::identity();
  if constexpr (AllThreads) {
    for (int i = static_cast<int>(threadIdx.x); i < n; i += Threads)
      q = fold(q, i, word(slots[i].m).load(cuda::memory_order_relaxed),
               word(slots[i].s).load(cuda::memory_order_relaxed));
    return Exchange::allreduce(q, smem, Threads / 32, 1);
  } else {
    constexpr int batch = 4;  // partials a lane reads at once
    const int warps = min(static_cast<int>(ceil_div(n, 32 * batch)), Threads / 32);
    const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
    if (warp < warps) {
      for (int i0 = warp * 32 * batch + lane; i0 < n; i0 += warps * 32 * batch) {
        std::uint64_t m[batch], s[batch];
#pragma unroll
        for (int k = 0; k < batch; ++k) {
          const int i = i0 + k * 32;
          m[k] = i < n ? word(slots[i].m).load(cuda::memory_order_relaxed) : 0;
          s[k] = i < n ? word(slots[i].s).load(cuda::memory_order_relaxed) : 0;
        }
#pragma unroll
        for (int k = 0; k < batch; ++k)
          if (i0 + k * 32 < n) q = fold(q, i0 + k * 32, m[k], s[k]);
      }
      q = butterfly<reduce, 32>(q);
      if (lane == 0) smem.slot[warp] = q;
    }
    __syncthreads();
    partial total = reduce::identity();
    for (int w = 0; w < warps; ++w) total = reduce::combine(total, smem.slot[w]);
    return total;
  }
}

/// Where group `group`'s partials of its `iteration`-th meeting are: the group's first set for
/// its first meeting (kept for held_back_kernel), then its second and third in turn.
__device__ inline tagged_partial* meeting_slots(split_workspace const& ws, int group,
                                                int iteration) {
  const int set = iteration == 0 ? 0 : 1 + (iteration & 1);
  return ws.partials + (std::int64_t{group} * 3 + set) * ws.split_ctas;
}

/// The meeting of a split group's CTAs over one row (its `iteration`-th). Thread 0 publishes
/// this CTA's partial `acc` with the meeting's tag (iteration + 1), counts its arrival and waits
/// until the group's others have arrived (relaxed atomics: the counter only says when to look);
/// then the CTA gathers the group's partials (see gather). A set of partials is rewritten two
/// meetings later (meeting_slots), by a CTA that has passed the meeting in between, so after
/// every CTA has read it. (A release on the counter waited for the SM's stores in flight, 2 us
/// a meeting of the staged split on the H200; benchmarks/TUNING.md.)
template <class Exchange, int Threads, bool AllThreads>
__device__ inline partial meet(split_workspace const& ws, int group, int rank, int iteration,
                               partial acc, typename Exchange::storage& smem) {
  using word = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>;
  tagged_partial* slots = meeting_slots(ws, group, iteration);
  const std::uint32_t tag = static_cast<std::uint32_t>(iteration + 1);
  if (threadIdx.x == 0) {
    const std::uint64_t tagged = std::uint64_t{tag} << 32;
    word(slots[rank].m).store(tagged | bits_as<std::uint32_t>(acc.m), cuda::memory_order_relaxed);
    word(slots[rank].s).store(tagged | bits_as<std::uint32_t>(acc.s), cuda::memory_order_relaxed);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrived(ws.counters[group]);
    arrived.fetch_add(1u, cuda::memory_order_relaxed);
    const unsigned target = static_cast<unsigned>(iteration + 1) * ws.split_ctas;
    while (arrived.load(cuda::memory_order_relaxed) < target) __nanosleep(32);
  }
  __syncthreads();
  return gather<Exchange, Threads, AllThreads>(slots, ws.split_ctas, tag, smem);
}

/// Rows split over `split_ctas` CTAs each, `row_groups` rows in flight; all CTAs of the launch
/// are resident at once (a cooperative launch), so a CTA may wait for the others of its group.
/// Group g (blockIdx.y) takes rows g, g + row_groups, ...; CTA r of a group (blockIdx.x) reads
/// its share of the row's tiles into a partial (keeping what fits on chip, see tile_share),
/// publishes the partial, waits for the group's others, combines them in the same order as every
/// other CTA, then stores its tiles (forward: in one pass with the loads of its share of the
/// group's next row, see tile_share::pass). (The grid's two dimensions give the group and rank as
/// special registers, read again where needed. Divided out of a one-dimensional index they were
/// kept in registers, and the fp32 forward kernel, at its bound of 80, spilled them; reloaded from
/// local memory at every meeting, past an L1 that the row's loads keep full, they cost 4-9 points
/// of copy bandwidth on the H200; benchmarks/TUNING.md.)
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    split_kernel(typename Op::args const a, split_workspace const ws) {
  using shape = kernel_shape<Op, V, Config>;
  using share = tile_share<Op, V, Config>;
  __shared__ typename shape::exchange::storage smem;
  extern __shared__ uint4 stashed[];

  const int group = static_cast<int>(blockIdx.y);
  const int rank = static_cast<int>(blockIdx.x);
  typename shape::fragment f;
  if constexpr (Op::tensors == 2 || V == 1) {
    // Backward, and the scalar fallback: a row's loads, the meeting, its stores. (Backward with
    // its stores merged with the next row's loads, as forward, ran up to 5 points slower on the
    // H200, benchmarks/TUNING.md; the scalar fallback so spilled its row state.)
    int iteration = 0;
    for (std::int64_t row = group; row < a.rows; row += ws.row_groups, ++iteration) {
      row_window w = Op::template window<V>(a, row, 0, share::tpr);
      const std::int64_t tiles = share::tiles(w);
      const std::int64_t t0 = share::first(tiles, rank, ws.split_ctas);
      const std::int64_t t1 = share::first(tiles, rank + 1, ws.split_ctas);

      partial acc =
          share::template load<true>(a, w, t0, t1, ws.stash_tiles, ws.stash_halves, f, stashed);
      acc = shape::exchange::allreduce(acc, smem, shape::warps_per_row, 1);

      const partial total = meet<typename shape::exchange, shape::threads_per_cta, true>(
          ws, group, rank, iteration, acc, smem);
      share::template store<true, true>(a, w, t0, t1, ws.stash_tiles, ws.stash_halves, f, stashed,
                                        total, row == 0 ? ws.skip_windows : 0);
      __syncthreads();  // the exchange's slots are rewritten by the next row
    }
  } else {
    // Forward: pass k stores row k - 1 of the group (none at first) and loads row k (none after
    // the last), see tile_share::pass; then row k's meeting.
    auto share_of = [&](std::int64_t row, std::int64_t& t0) {  // first tile and tile count
      const std::int64_t tiles =
          row < a.rows ? share::tiles(Op::template window<V>(a, row, 0, share::tpr)) : 0;
      t0 = share::first(tiles, rank, ws.split_ctas);
      return static_cast<int>(share::first(tiles, rank + 1, ws.split_ctas) - t0);
    };
    std::int64_t row = group, next = group, t0 = 0, n0;
    int tiles = 0;
    partial total = Op::reduce::identity();
    for (int iteration = 0;; ++iteration) {
      const int n_tiles = share_of(next, n0);
      partial acc = share::template pass<true>(a, row, t0, tiles, next, n0, n_tiles, ws.stash_tiles,
                                               f, stashed, total, ws.skip_windows);
      if (next >= a.rows) break;
      row = next;
      next += ws.row_groups;
      t0 = n0;
      tiles = n_tiles;
      __syncthreads();  // the exchange's slots: the previous meeting read them
      acc = shape::exchange::allreduce(acc, smem, shape::warps_per_row, 1);
      total = meet<typename shape::exchange, shape::threads_per_cta, true>(ws, group, rank,
                                                                           iteration, acc, smem);
    }
  }
}

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
/// share are -inf. Each thread folds its slots of the first half while the second lands
/// (online: max, then the sum rescaled) and, given the row's total, stores its slots from
/// shared memory. The registers hold no row data, so the CTAs an SM runs are set by shared
/// memory (ctas_per_sm). The planner keeps a row within the shared memory of the CTAs the
/// device runs at once, so window and element counts fit an int.
template <class Op, int V, int Config>
struct staged_share {
  using shape = kernel_shape<Op, V, Config>;
  using T = typename Op::value_type;
  using vec = vec_t<T, V>;
  static constexpr int threads = shape::threads_per_cta;
  static constexpr int slots = shape::slots;
  static constexpr int half = slots / 2;  // slots a half
  static_assert(Op::tensors == 1 && shape::threads_per_row == threads && slots % 2 == 0,
                "forward, one row a CTA, two halves");

  T const* x;
  T* y;
  int cols;
  int shift;
  int first;   // the share's first window in the row
  int owned;   // windows of the row in the share (at most its slots; none or fewer at the end)
  int whole0;  // the share's whole windows, [whole0, whole1) counted from its first
  int whole1;
  int at;         // the share's first element in the row
  int held_back;  // windows of the share, from its first, that `store` leaves (see skip_windows)

  /// `share`: the windows each CTA holds, the same for every row (share_windows: the plan's
  /// widest row over the CTAs, rounded up; computed by the host, where a division costs the
  /// CTA no wait for the SM's special-function unit, which the exps keep busy). Windows of row 0
  /// before `skip_windows` are not stored (split_workspace::skip_windows).
  __device__ staged_share(typename Op::args const& a, std::int64_t row, int rank, int share,
                          int skip_windows = 0) {
    const row_window w = Op::template window<V>(a, row, 0, 1);
    x = a.x + w.row * a.x_stride;
    y = a.y + w.row * a.y_stride;
    cols = static_cast<int>(w.cols);
    shift = w.shift;
    const std::int64_t windows = windows_of<V>(w);
    first = rank * share;
    owned = min(static_cast<int>(windows) - first, share);
    whole0 = max((shift > 0 ? 1 : 0) - first, 0);
    whole1 = min((cols + shift) / V - first, owned);
    at = first * V - shift;
    held_back = row == 0 ? max(min(skip_windows - first, owned), 0) : 0;
  }

  /// Thread 0: the copy of half `h`'s whole windows into `staged`, counted by `landed[h]`
  /// (which completes its phase when they have landed, at once if there are none).
  __device__ void issue(int h, uint4* staged, std::uint64_t* landed) const {
    const int lo = max(h * half * threads, whole0), hi = min((h + 1) * half * threads, whole1);
    const std::uint32_t bytes = hi > lo ? static_cast<std::uint32_t>(hi - lo) * 16u : 0u;
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &landed[h], bytes);
    if (bytes > 0)
      cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, &staged[lo],
                               x + at + lo * V, bytes, &landed[h]);
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

  /// The slots the copies do not fill: those past the share (a range of whole slots of the
  /// CTA's threads) -inf, filled by its threads in turn; the ragged windows, at most the share's
  /// first (where whole0 is 1) and the one after its whole ones (whole1, where it is owned),
  /// each read by the thread whose slot it is. (Every thread checking each of its slots, as
  /// before, ran 16-bit rows of 10-16 staged CTAs 0.6-3 points slower on the H200.)
  __device__ void edges(uint4* staged) const {
    const int t = static_cast<int>(threadIdx.x);
    vec neg;
#pragma unroll
    for (int i = 0; i < vec::words; ++i) neg.w[i] = vec::fill_word(from_float<T>(neg_inf));
    for (int i = max(owned, 0) + t; i < slots * threads; i += threads)
      staged[i] = bits_as<uint4>(neg);
    if (t == 0 && whole0 > 0 && owned > 0)
      staged[0] = bits_as<uint4>(staged_edge<T, V>(x, cols, shift, first));
    if (whole1 >= whole0 && whole1 < owned && whole1 % threads == t)
      staged[whole1] = bits_as<uint4>(staged_edge<T, V>(x, cols, shift, first + whole1));
  }

  /// The thread's partial over its slots, each half folded once it has landed (`parity`: the
  /// phase of the mbarriers it waits for).
  __device__ partial fold(uint4 const* staged, std::uint64_t* landed, int parity) const {
    float m = neg_inf, s = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      while (!cuda::ptx::mbarrier_try_wait_parity(&landed[h], static_cast<std::uint32_t>(parity))) {
      }
      vec v[half];
      float hm = neg_inf;
#pragma unroll
      for (int k = 0; k < half; ++k) {
        v[k] = bits_as<vec>(staged[(h * half + k) * threads + threadIdx.x]);
        hm = fmaxf(hm, v[k].max());
      }
      const float m2 = fmaxf(m, hm), sh = safe_shift(m2);
      const float hs = fused_exp::fits(sh) ? Op::template exp_sum<false>(v, fused_exp(sh))
                                           : Op::template exp_sum<false>(v, shifted_exp{sh});
      s = s * exp2_fast((m - sh) * log2e) + hs;
      m = m2;
    }
    return {m, s};
  }

  /// The thread's slots [K0, K1) of the share, normalized by the row's total, into y (the
  /// exps fused where the shift allows, see fused_exp).
  template <int K0, int K1>
  __device__ void store(uint4 const* staged, partial total) const {
    const float sh = safe_shift(total.m), inv = 1.0f / total.s;
    if (fused_exp::fits(sh)) {
      store<K0, K1>(staged, fused_exp(sh), inv);
    } else {
      store<K0, K1>(staged, shifted_exp{sh}, inv);
    }
  }
  template <int K0, int K1, class E>
  __device__ void store(uint4 const* staged, E const& e, float inv) const {
#pragma unroll 2
    for (int k = K0; k < K1; ++k) {
      const int i = k * threads + static_cast<int>(threadIdx.x);
      if (i < owned && i >= held_back)
        store_window(i, Op::normalized(bits_as<vec>(staged[i]), e, inv));
    }
  }

  /// Window `i` of the share (from its first) into y: a whole window as one vector, a ragged one
  /// element-wise.
  __device__ void store_window(int i, vec const& out) const {
    if (i >= whole0 && i < whole1) {
      out.store(y + at + i * V);
    } else {
      staged_edge_store<T, V>(y, cols, shift, first + i, out);
    }
  }

  /// Window `i` of the share read from x, as `store_window` writes it (`start` copies whole
  /// windows in bulk instead).
  __device__ vec load_window(int i) const {
    return i >= whole0 && i < whole1 ? vec::load(x + at + i * V, no_hint{})
                                     : staged_edge<T, V>(x, cols, shift, first + i);
  }

  /// The windows `store` holds back (row 0's, those the workspace covers), read again, normalized
  /// by the row's total (as `store` does) and stored, `batch` a thread at a time: `total()` gives
  /// it, called once, after the first batch's loads (see held_back_kernel).
  template <int batch, class Total>
  __device__ void store_held_back(Total&& total) const {
    partial t{};
    for (int i0 = 0; i0 < held_back; i0 += batch * threads) {
      vec v[batch];
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        const int i = i0 + k * threads + static_cast<int>(threadIdx.x);
        if (i < held_back) v[k] = load_window(i);
      }
      if (i0 == 0) t = total();
      const float sh = safe_shift(t.m), inv = 1.0f / t.s;
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        const int i = i0 + k * threads + static_cast<int>(threadIdx.x);
        if (i < held_back)
          store_window(i, fused_exp::fits(sh) ? Op::normalized(v[k], fused_exp(sh), inv)
                                              : Op::normalized(v[k], shifted_exp{sh}, inv));
      }
    }
  }
};

/// Forward rows in shared memory, one a cluster (see staged_share): the CTAs stage their
/// shares, exchange once and store.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    staged_kernel(typename Op::args const a, cluster_arg const c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  (void)a, (void)c;
  __trap();
#else
  using shape = kernel_shape<Op, V, Config>;
  using share = staged_share<Op, V, Config>;
  // A cluster of one CTA (16-bit rows of one CTA, plan_for) exchanges as a CTA does: st.async
  // into a cluster of one is refused by compute-sanitizer memcheck ("Cluster needs to have at
  // least 2 blocks").
  using cta_exchange = row_exchange<typename Op::reduce, 32, shape::threads_per_cta, false>;
  __shared__ union {
    typename shape::exchange::storage cluster;
    typename cta_exchange::storage cta;
  } smem;
  __shared__ std::uint64_t landed[2];
  extern __shared__ uint4 staged[];
  shape::exchange::begin(smem.cluster, shape::warps_per_row, c.size);

  // One row a cluster, a share of it a CTA (see cluster_index).
  const share s(a, std::int64_t{cluster_index(c)}, cluster_rank(), c.share);
  s.start(staged, landed);
  __syncthreads();  // the mbarriers are initialized

  const partial part = s.fold(staged, landed, 0);
  partial total;
  if (c.size > 1) {
    total = shape::exchange::allreduce(part, smem.cluster, shape::warps_per_row, c.size);
  } else {
    cuda::ptx::barrier_cluster_wait();  // begin's arrive; its mbarrier is left armed, unused
    total = cta_exchange::allreduce(part, smem.cta, shape::warps_per_row, 1);
  }
  s.template store<0, share::slots>(staged, total);
#endif
}

/// Forward rows staged (see staged_share) over `split_ctas` CTAs each, `row_groups` rows in
/// flight, all CTAs resident at once (a cooperative launch), meeting once a row through the
/// workspace (see meet). Group g takes rows g, g + row_groups, ...; the next row's first half
/// is copied in while the second half of this one is stored.
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta,
                                         (kernel_shape<Op, V, Config>::min_ctas_per_sm))
    staged_split_kernel(typename Op::args const a, split_workspace const ws) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  (void)a, (void)ws;
  __trap();
#else
  using shape = kernel_shape<Op, V, Config>;
  using share = staged_share<Op, V, Config>;
  __shared__ typename shape::exchange::storage smem;
  __shared__ std::uint64_t landed[2];
  extern __shared__ uint4 staged[];

  const int group = static_cast<int>(blockIdx.x) / ws.split_ctas;
  const int rank = static_cast<int>(blockIdx.x) % ws.split_ctas;
  share s(a, group, rank, ws.share, ws.skip_windows);
  s.start(staged, landed);
  __syncthreads();  // the mbarriers are initialized

  int iteration = 0;
  for (std::int64_t row = group; row < a.rows; row += ws.row_groups, ++iteration) {
    const partial acc = shape::exchange::allreduce(s.fold(staged, landed, iteration & 1), smem,
                                                   shape::warps_per_row, 1);
    const partial total = meet<typename shape::exchange, shape::threads_per_cta, false>(
        ws, group, rank, iteration, acc, smem);
    const std::int64_t next = row + ws.row_groups;
    const share n(a, next < a.rows ? next : row, rank, ws.share);
    // Each half is rewritten by the next row's copy once every thread has read it: a proxy
    // fence orders this thread's shared-memory accesses before the copy's (async proxy).
    s.template store<0, share::half>(staged, total);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    __syncthreads();
    if (threadIdx.x == 0 && next < a.rows) n.issue(0, staged, landed);
    s.template store<share::half, share::slots>(staged, total);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    __syncthreads();  // also: the exchange's slots are rewritten by the next row
    if (next < a.rows) {
      if (threadIdx.x == 0) n.issue(1, staged, landed);
      n.edges(staged);
    }
    s = n;
  }
#endif
}

/// Waits until the grid this one depends on has completed and its memory operations are
/// visible (a launch with programmatic stream serialization, sm_90: the grid may start before).
__device__ inline void wait_for_prior_grid() {
  NV_IF_TARGET(NV_PROVIDES_SM_90, (asm volatile("griddepcontrol.wait;" ::: "memory");))
}

/// After a split or staged split launch whose workspace is in the output
/// (split_workspace::skip_windows > 0), one CTA: the windows of row 0 that the workspace covers,
/// which the split kernels left, read again and stored given row 0's total, as those kernels
/// store them; the total gathered from group 0's first meeting as its CTAs gathered it (so all
/// bitwise the same), before any of the workspace is overwritten. Launched to start while the
/// split kernel ends (programmatic stream serialization), it loads the first windows of x (which
/// the split kernel does not write) before it waits for that kernel. (Stored at the end of the
/// split kernel instead, by the CTAs that held them back once all had finished, or with row 0's
/// total kept by the kernel, they spilled the forward split kernel's row state, ptxas, sm_90.)
template <class Op, int V, int Config>
ROWSOFTMAX_KERNEL void __launch_bounds__(kernel_configs[Config].threads_per_cta, 1)
    held_back_kernel(typename Op::args const a, split_workspace const ws) {
  using shape = kernel_shape<Op, V, Config>;
  constexpr int threads = shape::threads_per_cta;
  __shared__ typename shape::exchange::storage smem;
  constexpr bool all_threads = kernel_configs[Config].algo == algorithm::split;
  auto total_of_row_0 = [&] {
    wait_for_prior_grid();
    const partial total = gather<typename shape::exchange, threads, all_threads>(
        meeting_slots(ws, 0, 0), ws.split_ctas, 1, smem);
    __syncthreads();  // every thread has the total before the workspace is overwritten
    return total;
  };
  if constexpr (kernel_configs[Config].algo == algorithm::staged_split) {
    // Each share's held-back windows, 8 a thread at a time; row 0's total once, after the
    // first loads.
    partial total{};
    bool gathered = false;
    for (int rank = 0; rank * ws.share < ws.skip_windows; ++rank)
      staged_share<Op, V, Config>(a, 0, rank, ws.share, ws.skip_windows)
          .template store_held_back<8>([&] {
            if (!gathered) total = total_of_row_0();
            gathered = true;
            return total;
          });
  } else {
    // Tiles, as tile_share stores them.
    using tiles = tile_share<Op, V, Config>;
    typename tiles::fragment f;
    Op::load(a, Op::template window<V>(a, 0, threadIdx.x, tiles::tpr), f);
    const partial total = total_of_row_0();
    for (std::int64_t t = 0; t * tiles::tile < ws.skip_windows; ++t) {
      const row_window w = Op::template window<V>(a, 0, t * tiles::tile + threadIdx.x, tiles::tpr);
      if (t > 0) Op::load(a, w, f);
      Op::fold(f);
      Op::template store<true>(a, w, f, total);
    }
  }
}

}  // namespace rowsoftmax::detail
