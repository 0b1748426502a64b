// SPDX-License-Identifier: Apache-2.0
// A CTA's share of a row's tiles in the two passes of the streaming and split kernels: what it
// keeps on chip between the passes (the last tile in registers, more in its stash), what it
// reads again, and the L2 hints of the split kernel.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../plan.hpp"
#include "../math.cuh"
#include "../row_io.cuh"
#include "kernel_shape.cuh"
#include "stash.cuh"

namespace rowsoftmax::detail {

/// A CTA's share of a row, tiles [first_tile, end_tile) of `tile` windows, in the two passes of
/// the streaming and split kernels. `load` reads each tile into `frag` and folds it into the
/// CTA's partial, keeping the first `stash_tiles` in shared memory, the dy of the next `halves`
/// there too (backward, plan::stash_halves) and the last in registers (see keeps_last_tile);
/// `store`, given the row's total, writes them last first: the last from registers, the stashed
/// ones from shared memory (the half tiles' y read again), the others read again (the most
/// recently read first, so that they come from L2; in the split kernel, with L2 hints where
/// needed, see `hinted`).
template <class Op, int V, int Config>
struct tile_share {
  using shape = kernel_shape<Op, V, Config>;
  using reduce = typename Op::reduce;
  using fragment = typename shape::fragment;
  static constexpr int threads = shape::threads_per_row;
  static_assert(threads == shape::threads_per_cta, "one row per CTA");
  static constexpr std::int64_t tile = std::int64_t{threads} * shape::slots;  // windows a tile
  using kept = stash<fragment, threads,
                     static_cast<int>(stash_tile_bytes(shape::config, Op::inputs) / threads)>;
  static constexpr bool keep_last =
      keeps_last_tile(shape::config, Op::inputs, sizeof(typename Op::value_type));

  /// Half tile `k` of a backward op's stash (Op::kept_half: dy), after its `stash_tiles` whole
  /// tiles: put or get.
  template <bool Put, class Word>
  __device__ static void half(Word* stashed, int stash_tiles, int k, fragment& frag) {
    static_assert(Op::dir == direction::backward, "half tiles: backward");
    auto& kept_half = Op::kept_half(frag);
    using halves = stash<std::remove_reference_t<decltype(kept_half)>, threads,
                         static_cast<int>(stash_half_bytes(shape::config) / threads)>;
    Word* const base = stashed + std::int64_t{stash_tiles} * kept::stride * threads;
    if constexpr (Put) {
      halves::put(base, k, kept_half);
    } else {
      halves::get(base, k, kept_half);
    }
  }

  /// Whether a split CTA's share of `tiles` tiles takes L2 hints: rows of hints_second_reads
  /// (the hinted split configuration) that read tiles other than their register tile twice. The
  /// first loads of those evict last and every other load and store of the share evicts first,
  /// so that L2 keeps them for their second read (which evicts first, so that no line is left to
  /// evict last after the kernel). Rows that read no tile twice run slower hinted, hence the
  /// configuration of its own (tuning log, L2 hints).
  static constexpr bool hintable =
      hints_second_reads(shape::config, Op::dir, sizeof(typename Op::value_type), V);
  __device__ static bool hinted(std::int64_t tiles, int stash_tiles) {
    return hintable && tiles > stash_tiles + 1;
  }
  /// A tile's load, hinted (`again`: a tile read twice) or plain.
  template <bool Hints>
  __device__ static void load_tile(typename Op::args const& args, row_window const& window,
                                   fragment& frag, bool again) {
    if constexpr (Hints) {
      Op::load(args, window, frag, l2_hint::make(again ? l2_hint::last : l2_hint::first));
    } else {
      Op::load(args, window, frag);
    }
  }
  /// A tile's store, hinted or plain.
  template <bool OneStore, bool Hints>
  __device__ static void store_tile(typename Op::args const& args, row_window const& window,
                                    fragment const& frag, partial total) {
    if constexpr (Hints) {
      Op::template store<OneStore>(args, window, frag, total, l2_hint::make(l2_hint::first));
    } else {
      Op::template store<OneStore>(args, window, frag, total);
    }
  }

  /// Tiles of the row `window` covers.
  __device__ static std::int64_t tiles(row_window const& window) {
    return ceil_div(windows_of<V>(window), tile);
  }

  /// The first tile of CTA `rank`'s share when `ctas` CTAs share `tiles` tiles; CTA r takes
  /// [first(r), first(r + 1)), so shares differ by at most one tile.
  __device__ static std::int64_t first(std::int64_t tiles, int rank, int ctas) {
    return tiles * rank / ctas;
  }

  /// `load`, with L2 hints where `Hints` (the split kernel) and the share takes them (see
  /// `hinted`): one loop for each, so that the plain one is the code that runs without hints.
  template <bool Hints>
  __device__ static partial load(typename Op::args const& args, row_window& window,
                                 std::int64_t first_tile, std::int64_t end_tile, int stash_tiles,
                                 int halves, fragment& frag, uint4* stashed) {
    if constexpr (Hints && hintable) {
      if (hinted(end_tile - first_tile, stash_tiles))
        return load_tiles<true>(args, window, first_tile, end_tile, stash_tiles, halves, frag,
                                stashed);
    }
    return load_tiles<false>(args, window, first_tile, end_tile, stash_tiles, halves, frag,
                             stashed);
  }
  template <bool Hints>
  __device__ static partial load_tiles(typename Op::args const& args, row_window& window,
                                       std::int64_t first_tile, std::int64_t end_tile,
                                       int stash_tiles, int halves, fragment& frag,
                                       uint4* stashed) {
    partial acc = reduce::identity();
    for (std::int64_t t = first_tile; t < end_tile; ++t) {
      window.first = t * tile + threadIdx.x;
      if constexpr (Op::dir == direction::backward) {
        if (t - first_tile >= stash_tiles && t - first_tile < stash_tiles + halves &&
            !(keep_last && t == end_tile - 1)) {
          // dy kept, y read again
          if constexpr (Hints) {
            Op::load(args, window, frag, l2_hint::make(l2_hint::first),
                     l2_hint::make(l2_hint::last));
          } else {
            Op::load(args, window, frag);
          }
          half<true>(stashed, stash_tiles, static_cast<int>(t - first_tile) - stash_tiles, frag);
          acc = reduce::combine(acc, Op::fold(frag));
          continue;
        }
      }
      load_tile<Hints>(args, window, frag,
                       t - first_tile >= stash_tiles && !(keep_last && t == end_tile - 1));
      if (t - first_tile < stash_tiles && !(keep_last && t == end_tile - 1))
        kept::put(stashed, static_cast<int>(t - first_tile), frag);
      acc = reduce::combine(acc, Op::fold(frag));
    }
    return acc;
  }

  /// `store`, hinted as `load`; tiles that start before window `skip` are not stored (those the
  /// split kernel's workspace covers in the output, see split_workspace::skip_windows).
  template <bool OneStore, bool Hints>
  __device__ static void store(typename Op::args const& args, row_window& window,
                               std::int64_t first_tile, std::int64_t end_tile, int stash_tiles,
                               int halves, fragment& frag, uint4 const* stashed, partial total,
                               int skip = 0) {
    if constexpr (Hints && hintable) {
      if (hinted(end_tile - first_tile, stash_tiles))
        return store_tiles<OneStore, true>(args, window, first_tile, end_tile, stash_tiles, halves,
                                           frag, stashed, total, skip);
    }
    store_tiles<OneStore, false>(args, window, first_tile, end_tile, stash_tiles, halves, frag,
                                 stashed, total, skip);
  }
  template <bool OneStore, bool Hints>
  __device__ static void store_tiles(typename Op::args const& args, row_window& window,
                                     std::int64_t first_tile, std::int64_t end_tile,
                                     int stash_tiles, int halves, fragment& frag,
                                     uint4 const* stashed, partial total, int skip) {
    for (std::int64_t t = end_tile - 1; t >= first_tile; --t) {
      window.first = t * tile + threadIdx.x;
      if (!keep_last || t < end_tile - 1) {  // else the last tile is still in registers, folded
        if (t - first_tile < stash_tiles) {
          kept::get(stashed, static_cast<int>(t - first_tile), frag);
        } else if (Op::dir == direction::backward && t - first_tile < stash_tiles + halves) {
          if constexpr (Op::dir == direction::backward) {
            half<false>(stashed, stash_tiles, static_cast<int>(t - first_tile) - stash_tiles, frag);
            if constexpr (Hints) {
              Op::load_other_half(args, window, frag, l2_hint::make(l2_hint::first));
            } else {
              Op::load_other_half(args, window, frag);
            }
          }
        } else {
          load_tile<Hints>(args, window, frag, false);
        }
        Op::fold(frag);
      }
      if (t * tile >= skip) store_tile<OneStore, Hints>(args, window, frag, total);
    }
  }

  /// One pass of a split CTA between two meetings: stores this row's share (tiles
  /// [this_first, this_first + this_tiles), given its `total`; its last tile in `frag` where
  /// keeps_last_tile) and loads the next row's share (tiles [next_first, next_first +
  /// next_tiles), none past the last row), returning the next row's partial and leaving its last
  /// tile in `frag`. The two are interleaved, a tile stored then a tile loaded: this row's
  /// register tile, then its tiles read again (the most recently read first, as `store`), then
  /// its stashed tiles; the next row's loads start as the first stashed tile is stored, each
  /// stashed tile taking the slot just read, then the tiles read again, the register tile last
  /// (as `load`). Forward rows run faster in this one pass than in two (tuning log, split rows).
  /// Hinted where either row's share takes hints (see `load`), tile by tile: a loop for each
  /// spills the fp32 kernel. Tiles of row 0 that start before window `skip` are not stored (see
  /// `store`).
  template <bool OneStore>
  __device__ static partial pass(typename Op::args const& args, std::int64_t this_row,
                                 std::int64_t this_first, int this_tiles, std::int64_t next_row,
                                 std::int64_t next_first, int next_tiles, int stash_tiles,
                                 fragment& frag, uint4* stashed, partial total, int skip) {
    const bool hints = hinted(this_tiles, stash_tiles) || hinted(next_tiles, stash_tiles);
    auto load_one = [&](row_window const& window, bool again) {
      if (hints) {
        load_tile<true>(args, window, frag, again);
      } else {
        load_tile<false>(args, window, frag, again);
      }
    };
    auto store_one = [&](row_window const& window) {
      if (this_row == 0 && window.first - threadIdx.x < skip) return;
      if (hints) {
        store_tile<OneStore, true>(args, window, frag, total);
      } else {
        store_tile<OneStore, false>(args, window, frag, total);
      }
    };
    // Tile t of a row's window, built where used: the two rows' windows kept across the loop
    // spill the fp32 forward kernel.
    auto at = [&](std::int64_t row, std::int64_t t) {
      return Op::template window<V>(args, row, t * tile + threadIdx.x, threads);
    };
    // Tiles in registers (0 or 1) of this row and the next.
    const int this_in_registers = keep_last && this_tiles > 0 ? 1 : 0,
              next_in_registers = keep_last && next_tiles > 0 ? 1 : 0;
    if (this_in_registers) store_one(at(this_row, this_first + this_tiles - 1));
    const int this_looped = this_tiles - this_in_registers;  // this row's tiles the loop stores
    const int this_stashed = min(this_looped, stash_tiles),
              this_read_again = this_looped - this_stashed;
    const int next_stashed = min(next_tiles - next_in_registers, stash_tiles);
    const int steps = max(this_looped, this_read_again + next_tiles);
    partial acc = reduce::identity();
    for (int j = 0; j < steps; ++j) {
      if (j < this_looped) {
        const int slot = j - this_read_again;
        const std::int64_t t = this_first + (j < this_read_again ? this_looped - 1 - j : slot);
        if (j < this_read_again) {
          load_one(at(this_row, t), false);
        } else {
          kept::get(stashed, slot, frag);
        }
        Op::fold(frag);
        store_one(at(this_row, t));
      }
      const int i = j - this_read_again;  // the next row's tile, from its first
      if (i >= 0 && i < next_tiles) {
        load_one(at(next_row, next_first + i),
                 i >= next_stashed && i != next_tiles - next_in_registers);
        if (i < next_stashed) kept::put(stashed, i, frag);
        acc = reduce::combine(acc, Op::fold(frag));
      }
    }
    return acc;
  }
};

}  // namespace rowsoftmax::detail
