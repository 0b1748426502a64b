// SPDX-License-Identifier: Apache-2.0
// Host-only: how a softmax call is mapped onto the GPU. `plan_for` is a short driver over one
// selector per tier; each reads the kernel configurations by name (detail/kernel_configs.hpp) and
// its thresholds from the architecture's tuning record (detail/tuning.hpp). Everything here is
// plain data and constexpr functions, so it is unit-tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "detail/kernel_configs.hpp"
#include "detail/tuning.hpp"
#include "plan_types.hpp"

namespace rowsoftmax {
namespace detail {

/// Where a split plan's partials start in its workspace: after one arrival counter (4 bytes)
/// per row group, 8-byte aligned.
constexpr std::int64_t split_partials_offset(int row_groups) noexcept {
  return (std::int64_t{row_groups} * 4 + 7) / 8 * 8;
}

/// Workspace of a split plan: the counters, then three sets of partials (16 bytes each: two
/// floats, each tagged in a word of 8 bytes) per group, one per CTA of the group: one for the
/// group's first meeting (kept for the windows of row 0 that a workspace in the output covers,
/// see plan::workspace_in_output), two in turn for the others.
constexpr std::int64_t split_workspace_bytes(int row_groups, int split_ctas) noexcept {
  return split_partials_offset(row_groups) + std::int64_t{row_groups} * 3 * split_ctas * 16;
}

/// Where a workspace kept in the output's first row starts: its first 16-byte boundary.
inline constexpr int workspace_alignment = 16;

/// Of the CTA slots a device has at two CTAs an SM, the share in per mille that clusters of `n`
/// CTAs fill at once (device_limits::clusters_at_two_an_sm); 1000 where unknown.
constexpr int cluster_fill(device_limits const& limits, int n) noexcept {
  const std::int64_t one = limits.clusters_at_two_an_sm[1];
  const std::int64_t at_n = n >= 1 && n <= max_cluster_size ? limits.clusters_at_two_an_sm[n] : 0;
  return one > 0 && at_n > 0 ? static_cast<int>(at_n * n * 1000 / one) : 1000;
}

/// The plan that runs `config` over rows of `windows` vector windows, with `cluster` CTAs a
/// row where the configuration forms clusters (streaming: the CTAs that share a row's tiles).
/// The result may not hold the row: callers check with `plan_holds`.
constexpr plan make_plan(int config, row_layout layout, std::int64_t rows, std::int64_t windows,
                         std::size_t elem_size, int cluster = 1) noexcept {
  kernel_config const& c = kernel_configs[config];
  plan p{};
  p.algo = c.algo;
  p.config = config;
  p.vec = layout.vec;
  p.shifted = layout.shifted;
  p.threads_per_row = c.threads_per_row;
  p.vecs_per_thread = slots_per_thread(c, layout.vec, elem_size);
  p.rows_per_thread = c.rows_per_thread;
  p.tiled = c.tiled;
  p.rows_per_cta = c.threads_per_cta / c.threads_per_row * c.rows_per_thread;
  p.threads_per_cta = c.threads_per_cta;
  p.cluster_size = c.clustered ? cluster : 1;
  p.windows = windows;
  p.grid_ctas = c.clustered || c.algo == algorithm::streaming ? rows * p.cluster_size
                                                              : ceil_div(rows, p.rows_per_cta);
  return p;
}

/// The groups of a split or staged split plan `p`: `groups` rows in flight of `ctas` CTAs each,
/// and the workspace they meet in.
constexpr plan with_groups(plan p, std::int64_t groups, std::int64_t ctas) noexcept {
  p.row_groups = static_cast<int>(groups);
  p.split_ctas = static_cast<int>(ctas);
  p.grid_ctas = groups * ctas;
  p.workspace_bytes = split_workspace_bytes(p.row_groups, p.split_ctas);
  return p;
}

/// Shared memory a CTA of configuration `c` may stash tiles in at the occupancy its registers
/// allow (ctas_per_sm): its part of the SM's shared memory, less cta_smem_reserve, within what
/// one CTA may ask for.
constexpr std::int64_t stash_budget(kernel_config const& c, int tensors, std::size_t elem_size,
                                    device_limits const& limits) noexcept {
  std::int64_t budget =
      limits.shared_bytes_per_sm / ctas_per_sm(c, tensors, elem_size) - cta_smem_reserve;
  if (budget > limits.shared_bytes_per_cta - cta_smem_reserve)
    budget = limits.shared_bytes_per_cta - cta_smem_reserve;
  return budget > 0 ? budget : 0;
}

/// Tiles a CTA of configuration `c` keeps in shared memory: its stash_budget in whole tiles.
constexpr int stash_capacity(kernel_config const& c, int tensors, std::size_t elem_size,
                             device_limits const& limits) noexcept {
  return static_cast<int>(stash_budget(c, tensors, elem_size, limits) /
                          stash_tile_bytes(c, tensors));
}

/// Half tiles (dy alone) a backward streaming or split CTA of configuration `c` keeps beside
/// `stash_tiles` whole ones: what its stash_budget holds beyond them.
constexpr int stash_half_capacity(kernel_config const& c, std::size_t elem_size, int stash_tiles,
                                  device_limits const& limits) noexcept {
  const std::int64_t left =
      stash_budget(c, 2, elem_size, limits) - stash_tiles * stash_tile_bytes(c, 2);
  return left > 0 ? static_cast<int>(left / stash_half_bytes(c)) : 0;
}

/// Tiles (a tile: every thread of a CTA of `p`'s configuration, each slot once) in a row of `p`.
constexpr std::int64_t row_tiles(plan const& p) noexcept {
  return ceil_div(p.windows, std::int64_t{p.threads_per_row} * p.vecs_per_thread);
}

/// Windows of a row each CTA of a register cluster, staged or staged split plan `p` holds, the
/// same in every row: the widest row's over the CTAs that share it (the cluster, or the split
/// group), rounded up; within a CTA's slots where plan_holds(p). The launcher passes it to the
/// kernel, which so divides nothing before its loads.
constexpr int share_windows(plan const& p) noexcept {
  const int ctas =
      kernel_configs[p.config].algo == algorithm::staged_split ? p.split_ctas : p.cluster_size;
  return static_cast<int>(ceil_div(p.windows, ctas));
}

/// Tiles a CTA stashes of a share of `share` tiles: those not in registers (`in_registers`:
/// the last tile, or none), within the `capacity` of its shared memory.
constexpr int stashed_tiles(std::int64_t share, int in_registers, int capacity) noexcept {
  const std::int64_t rest = share - in_registers;
  return static_cast<int>(rest < 0 ? 0 : rest < capacity ? rest : capacity);
}

/// Half tiles (plan::stash_halves) each CTA of the split plan `p` keeps, its whole stashed tiles
/// set: backward CTAs whose shares of `share` tiles exceed what they hold (the `in_registers`
/// tile and `p.stash_tiles`) keep the dy of the next ones where their stash leaves room
/// (stash_half_capacity), so that they read only y of those again; forward none. Planned for
/// hinted split plans only (make_split_plan); the streaming kernel takes them when forced.
constexpr int stashed_halves(direction dir, plan const& p, std::int64_t share, int in_registers,
                             std::size_t elem_size, device_limits const& limits) noexcept {
  if (dir != direction::backward) return 0;
  return stashed_tiles(
      share, in_registers + p.stash_tiles,
      stash_half_capacity(kernel_configs[p.config], elem_size, p.stash_tiles, limits));
}

/// Tiles a streaming CTA of configuration `c` may stash: what its shared memory holds
/// (stash_capacity), forward at most planner_tuning::streaming_forward_stash_tiles.
constexpr int streaming_stash_capacity(kernel_config const& c, direction dir, std::size_t elem_size,
                                       device_limits const& limits) noexcept {
  const int most = tuning_for(limits.compute_capability).streaming_forward_stash_tiles;
  const int capacity = stash_capacity(c, tensors_of(dir), elem_size, limits);
  return dir == direction::forward && capacity > most ? most : capacity;
}

/// Tiles each CTA of the streaming plan `p` (its configuration and cluster size) stashes: its
/// share of the row's tiles but the one it keeps in registers, within streaming_stash_capacity.
constexpr int streaming_stash_tiles(direction dir, plan const& p, std::size_t elem_size,
                                    device_limits const& limits) noexcept {
  kernel_config const& c = kernel_configs[p.config];
  return stashed_tiles(ceil_div(row_tiles(p), p.cluster_size),
                       keeps_last_tile(c, tensors_of(dir), elem_size) ? 1 : 0,
                       streaming_stash_capacity(c, dir, elem_size, limits));
}

/// The streaming plan for rows of `windows` windows: the fewest CTAs (up to `max_cluster`, a
/// cluster where more than one) whose shares of the row's tiles fit their registers and
/// (backward) one stashed tile, so the row is read once; rows longer than that take
/// `max_cluster` CTAs (none without a tile) with their stashes (streaming_stash_tiles), reading
/// what they do not hold twice. A CTA's tiles are read one after the other (each tile's loads
/// wait for the previous tile's fold), so shares of two tiles beat three (tuning log, streaming).
constexpr plan make_streaming_plan(direction dir, row_layout layout, std::int64_t rows,
                                   std::int64_t windows, std::size_t elem_size,
                                   device_limits const& limits, int max_cluster) noexcept {
  kernel_config const& c = kernel_configs[configs::streaming_cluster];
  const int tensors = tensors_of(dir);
  const int in_registers = keeps_last_tile(c, tensors, elem_size) ? 1 : 0;
  // Tiles of a read-once share: backward a stashed one too (half the CTAs); forward CTAs stash
  // only what they would otherwise read twice, as many CTAs as without a stash.
  const int read_once_share =
      (dir == direction::backward && stash_capacity(c, tensors, elem_size, limits) >= 1 ? 1 : 0) +
      in_registers;
  const std::int64_t tiles =
      row_tiles(make_plan(configs::streaming_one_cta, layout, rows, windows, elem_size));
  std::int64_t ctas = read_once_share > 0 ? ceil_div(tiles, read_once_share) : tiles;
  if (ctas > max_cluster) ctas = max_cluster;
  if (ctas > tiles) ctas = tiles;
  if (ctas < 1) ctas = 1;
  plan p = ctas < 2 ? make_plan(configs::streaming_one_cta, layout, rows, windows, elem_size)
                    : make_plan(configs::streaming_cluster, layout, rows, windows, elem_size,
                                static_cast<int>(ctas));
  p.stash_tiles = streaming_stash_tiles(dir, p, elem_size, limits);
  return p;
}

/// Tile transfers of the CTAs of a split row of `tiles` tiles over `ctas` CTAs that each hold
/// `held` tiles on chip: the tiles read twice (shares differ by at most one tile).
constexpr std::int64_t tiles_read_twice(std::int64_t tiles, std::int64_t ctas,
                                        std::int64_t held) noexcept {
  const std::int64_t share = tiles / ctas, larger = tiles % ctas;
  return larger * (share + 1 > held ? share + 1 - held : 0) +
         (ctas - larger) * (share > held ? share - held : 0);
}

/// The split plan for rows of `windows` windows. The CTAs the device runs at once (its
/// registers' bound) form `row_groups` groups of `split_ctas` CTAs, a group taking one row at a
/// time; a CTA keeps the last tile of its share in registers (keeps_last_tile) and up to
/// `stash_tiles` more in shared memory, in hinted backward plans the dy of up to `stash_halves`
/// more (stash_half_capacity), and reads the rest of its share twice. The groups minimise rounds
/// x (a CTA's tile transfers a round - loads, stores, second loads - plus the meeting's cost,
/// half tiles counted as read twice whole). Most rows count the average CTA, so rows that fit on
/// chip are read once; the forward (but for the 16-bit scalar fallback), whose second reads come
/// from L2 (hints_second_reads), counts the mean of the average and the largest share (a round
/// lasts until the group's slowest CTA arrives), a dearer meeting, and a bound on the tiles read
/// twice, so it takes more groups (tuning log, split rows). `split_ctas` < 2: the tier does not
/// apply.
constexpr plan make_split_plan(direction dir, row_layout layout, std::int64_t rows,
                               std::int64_t windows, std::size_t elem_size,
                               device_limits const& limits) noexcept {
  planner_tuning const& tuning = tuning_for(limits.compute_capability);
  kernel_config const& c = kernel_configs[configs::split];
  plan p = make_plan(configs::split, layout, rows, windows, elem_size);
  const int tensors = tensors_of(dir);
  const std::int64_t resident = std::int64_t{limits.sm_count} * ctas_per_sm(c, tensors, elem_size);
  const int stash = stash_capacity(c, tensors, elem_size, limits);
  const int in_registers = keeps_last_tile(c, tensors, elem_size) ? 1 : 0;
  const std::int64_t held = stash + in_registers;
  const std::int64_t tiles = row_tiles(p);
  const bool l2_rereads = dir == direction::forward && (elem_size == 4 || layout.vec > 1);
  const double max_rereads = elem_size == 4 ? tuning.split_forward_rereads_per_cta_fp32
                                            : tuning.split_forward_rereads_per_cta_16bit;
  const std::int64_t most_groups = rows < resident / 2 ? rows : resident / 2;
  // CTAs a row with g groups: the resident CTAs shared out, none without a tile.
  auto ctas_of = [&](std::int64_t groups) {
    return resident / groups < tiles ? resident / groups : tiles;
  };
  double best_cost = -1;
  std::int64_t best_groups = 1;
  for (std::int64_t groups = 1; groups <= most_groups; ++groups) {
    const std::int64_t ctas = ctas_of(groups);
    const std::int64_t again = tiles_read_twice(tiles, ctas, held);
    const double average = static_cast<double>(2 * tiles + again) / static_cast<double>(ctas);
    double round = average + tuning.split_meeting_transfers;
    if (l2_rereads) {
      if (groups > 1 && static_cast<double>(again) > max_rereads * static_cast<double>(ctas))
        continue;
      const std::int64_t largest = ceil_div(tiles, ctas);
      const double slowest =
          static_cast<double>(2 * largest + (largest > held ? largest - held : 0));
      round = (average + slowest) / 2 + tuning.split_forward_meeting_transfers +
              static_cast<double>(ctas) / tuning.split_forward_meeting_ctas_per_transfer;
    }
    const double cost = static_cast<double>(ceil_div(rows, groups)) * round;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_groups = groups;
    }
  }
  const std::int64_t ctas = ctas_of(best_groups);
  p = with_groups(p, best_groups, ctas);
  p.stash_tiles = stashed_tiles(ceil_div(tiles, ctas), in_registers, stash);
  // Backward and 16-bit forward rows of which nearly every CTA reads a tile twice take the
  // hinted kernel, and only those keep half tiles: where few CTAs read a tile twice, its second
  // read mostly hits L2 unhinted, and the hints' evict-first on the rest cost more (tuning log,
  // L2 hints; half tiles).
  const std::int64_t share = tiles / ctas, larger = tiles % ctas;
  const ratio hinted = tuning.split_hinted_from_rereading_ctas;
  if ((dir == direction::backward || elem_size < 4) && layout.vec > 1 &&
      (share > held || (share == held && hinted.den * larger >= hinted.num * ctas))) {
    p.config = configs::split_hinted;
    p.stash_halves = stashed_halves(dir, p, ceil_div(tiles, ctas), in_registers, elem_size, limits);
  }
  return p;
}

/// The staged split plan for forward rows of `windows` windows: groups of CTAs that hold a
/// row in their shared memory (32 KB a CTA), of the CTAs the device runs at once (as its shared
/// memory holds them); as many groups as the fewest rounds of rows need, those CTAs shared out
/// evenly among them, but at most planner_tuning::staged_split_max_ctas_per_needed times the CTAs
/// a row needs (the more CTAs meet, the longer they wait). The rows in flight meet in turn, and
/// while a group meets its CTAs load nothing, so the device must hold
/// planner_tuning::staged_split_min_rows_on_chip rows at once (tuning log, split rows).
/// `split_ctas` < 2: no such plan.
constexpr plan make_staged_split_plan(row_layout layout, std::int64_t rows, std::int64_t windows,
                                      std::size_t elem_size, device_limits const& limits) noexcept {
  planner_tuning const& tuning = tuning_for(limits.compute_capability);
  kernel_config const& c = kernel_configs[configs::staged_split];
  const plan p = make_plan(configs::staged_split, layout, rows, windows, elem_size);
  const std::int64_t cta_bytes = staging_bytes(c) + cta_smem_reserve;
  std::int64_t per_sm =
      cta_bytes <= limits.shared_bytes_per_cta ? limits.shared_bytes_per_sm / cta_bytes : 0;
  if (per_sm > ctas_per_sm(c, 1, elem_size)) per_sm = ctas_per_sm(c, 1, elem_size);
  const std::int64_t resident = std::int64_t{limits.sm_count} * per_sm;
  const std::int64_t need = ceil_div(windows, window_capacity(c, layout.vec, elem_size));
  if (need < 2 || tuning.staged_split_min_rows_on_chip * need > resident) return p;
  const std::int64_t most = resident / need < rows ? resident / need : rows;
  const std::int64_t groups = ceil_div(rows, ceil_div(rows, most));  // as many as the rounds need
  const std::int64_t most_ctas = tuning.staged_split_max_ctas_per_needed * need;
  return with_groups(p, groups, resident / groups < most_ctas ? resident / groups : most_ctas);
}

/// Tiles of a streaming plan's share that a CTA holds on chip: its stash and, where
/// keeps_last_tile, its last tile in registers.
constexpr std::int64_t streamed_held_tiles(plan const& p, direction dir,
                                           std::size_t elem_size) noexcept {
  return p.stash_tiles +
         (keeps_last_tile(kernel_configs[p.config], tensors_of(dir), elem_size) ? 1 : 0);
}

/// Whether a streaming plan keeps every CTA's share of the row on chip, so the row is read once.
constexpr bool reads_once(plan const& p, direction dir, std::size_t elem_size) noexcept {
  return ceil_div(row_tiles(p), p.cluster_size) <= streamed_held_tiles(p, dir, elem_size);
}

/// Tiles of a row that the CTAs of the streaming plan `p` read twice: those of each CTA's share
/// beyond what it holds on chip.
constexpr std::int64_t streamed_twice_tiles(plan const& p, direction dir,
                                            std::size_t elem_size) noexcept {
  return tiles_read_twice(row_tiles(p), p.cluster_size, streamed_held_tiles(p, dir, elem_size));
}

/// Whether `rows` rows that the streaming plan `p` reads partly twice run streamed rather than
/// split, given a workspace: where one tile of a row is read twice, or, forward, where few of its
/// tiles are (planner_tuning::streamed_twice_at_most) and the launch fills many waves
/// (streamed_min_waves). Rows streamed through one CTA (no clusters) are split: a row then has
/// one SM where the split gives it several (tuning log, streaming).
constexpr bool streams_partly_twice(plan const& p, direction dir, std::int64_t rows,
                                    std::size_t elem_size, device_limits const& limits) noexcept {
  planner_tuning const& tuning = tuning_for(limits.compute_capability);
  if (p.cluster_size < 2) return false;
  const std::int64_t twice = streamed_twice_tiles(p, dir, elem_size);
  if (twice == 1) return true;
  if (dir == direction::backward) return false;
  const std::int64_t waves =
      rows * p.cluster_size /
      (std::int64_t{limits.sm_count} *
       ctas_per_sm(kernel_configs[p.config], tensors_of(direction::forward), elem_size));
  return tuning.streamed_twice_at_most.den * twice <=
             tuning.streamed_twice_at_most.num * row_tiles(p) &&
         waves >= tuning.streamed_min_waves;
}

/// Whether plan `p` can run its rows: a known configuration, a cluster within 16, groups (split,
/// staged split) that match the grid, half tiles in the stash (stash_halves) only where
/// streaming or split, and (but for streaming and split) the row within its threads' slots
/// (staged split: of its split CTAs).
constexpr bool plan_holds(plan const& p) noexcept {
  if (p.config < 0 || p.config >= num_kernel_configs) return false;
  kernel_config const& c = kernel_configs[p.config];
  if (p.cluster_size < 1 || p.cluster_size > (c.clustered ? max_cluster_size : 1)) return false;
  if (p.stash_halves < 0 ||
      (p.stash_halves > 0 && c.algo != algorithm::split && c.algo != algorithm::streaming))
    return false;
  if (splits(c) && !(p.split_ctas >= 1 && p.row_groups >= 1 && p.stash_tiles >= 0 &&
                     p.grid_ctas == std::int64_t{p.split_ctas} * p.row_groups))
    return false;
  if (c.algo == algorithm::split) return true;
  if (c.algo == algorithm::staged_split)
    return p.stash_tiles == 0 &&
           std::int64_t{p.threads_per_row} * p.vecs_per_thread * p.split_ctas >= p.windows;
  if (c.algo == algorithm::streaming) return p.stash_tiles >= 0;
  return std::int64_t{p.threads_per_row} * p.vecs_per_thread * p.cluster_size >= p.windows;
}

/// What every tier's selector reads about one call.
struct plan_call {
  direction dir;
  std::int64_t rows;
  std::int64_t cols;
  std::size_t elem_size;
  row_layout layout;
  device_limits const& limits;
  bool with_workspace;
  planner_tuning const& tuning;
  std::int64_t windows;  ///< vector windows of a row, the worst misaligned head included
  int max_cluster;       ///< the largest cluster the device allows (1: no clusters)

  constexpr bool forward() const noexcept { return dir == direction::forward; }
  constexpr bool fp32() const noexcept { return elem_size == 4; }
  constexpr bool vectorized() const noexcept { return layout.vec > 1; }
  constexpr bool has_clusters() const noexcept { return max_cluster >= 2; }
  /// Windows `config` holds with `cluster` CTAs.
  constexpr std::int64_t capacity(int config, int cluster = 1) const noexcept {
    return window_capacity(kernel_configs[config], layout.vec, elem_size, cluster);
  }
  /// CTAs of `config` the row takes.
  constexpr std::int64_t ctas(int config) const noexcept {
    return ceil_div(windows, capacity(config));
  }
  /// Whether the SMs get at most this many CTAs of a launch whose rows take `ctas` each.
  constexpr bool launch_at_most(std::int64_t ctas, std::int64_t per_sm) const noexcept {
    return rows * ctas <= per_sm * limits.sm_count;
  }
  /// Whether `config` has a kernel for this call (has_kernel) and holds its row in `cluster`.
  constexpr bool fits(int config, int cluster = 1) const noexcept {
    return has_kernel(config, dir, layout.vec, elem_size) && windows <= capacity(config, cluster);
  }
  /// The plan of `config` over this call's rows of `row_windows` windows in `cluster` CTAs; no
  /// plan (plan_holds fails) where the configuration has no kernel for the call.
  constexpr plan choose(int config, std::int64_t cluster = 1) const noexcept {
    return choose(config, windows, cluster);
  }
  constexpr plan choose(int config, std::int64_t row_windows, std::int64_t cluster) const noexcept {
    plan p = make_plan(config, layout, rows, row_windows, elem_size, static_cast<int>(cluster));
    if (!has_kernel(config, dir, layout.vec, elem_size)) p.config = -1;
    return p;
  }
};

/// Short rows (at most 16 vectors): tiled where misaligned and contiguous and a tiled
/// configuration with a kernel holds them, else short rows (not misaligned 16-bit rows:
/// planner_tuning::short_rows_for_misaligned_16bit), the fewest threads that hold the row.
constexpr std::optional<plan> short_row_plan(plan_call const& call) noexcept {
  if (!call.vectorized()) return std::nullopt;
  if (call.layout.shifted && call.layout.contiguous) {
    const std::int64_t windows =
        row_windows(kernel_configs[configs::first_tiled], call.layout, call.cols);
    for (int config = configs::first_tiled; config <= configs::last_tiled; ++config)
      if (has_kernel(config, call.dir, call.layout.vec, call.elem_size) &&
          windows <= call.capacity(config))
        return call.choose(config, windows, 1);
  }
  if (call.layout.shifted && !call.fp32() && !call.tuning.short_rows_for_misaligned_16bit)
    return std::nullopt;
  for (int config = configs::first_short_rows; config <= configs::last_short_rows; ++config)
    if (call.fits(config)) return call.choose(config);
  return std::nullopt;
}

/// Whether the call is forward, on a device with clusters, and its rows are few: in 128-thread
/// clusters they come to at most planner_tuning::few_rows_ctas_per_sm CTAs an SM.
constexpr bool few_forward_rows(plan_call const& call) noexcept {
  return call.forward() && call.has_clusters() &&
         call.launch_at_most(call.ctas(configs::cluster_128t), call.tuning.few_rows_ctas_per_sm);
}

/// One CTA a row: the smallest one-CTA configuration with a kernel that holds the row. The
/// widest not for few forward rows (few_forward_rows: spread over the SMs in 128-thread clusters,
/// cluster_plan), and for 16-bit forward rows in launches of many rows an SM one staged CTA of
/// 40 KB instead (planner_tuning::staged_one_cta_min_rows_per_sm; tuning log, one-CTA register
/// rows).
constexpr std::optional<plan> one_cta_plan(plan_call const& call) noexcept {
  static_assert(kernel_configs[configs::staged_40KB].threads_per_cta ==
                        kernel_configs[configs::widest_one_cta].threads_per_cta &&
                    kernel_configs[configs::staged_40KB].bytes >
                        kernel_configs[configs::widest_one_cta].bytes,
                "one staged CTA of 40 KB holds every row the widest one-CTA configuration does");
  for (int config = configs::first_one_cta; config < configs::widest_one_cta; ++config)
    if (call.fits(config)) return call.choose(config);
  if (!call.fits(configs::widest_one_cta) || few_forward_rows(call)) return std::nullopt;
  const bool staged_instead =
      call.forward() && !call.fp32() && call.vectorized() && call.has_clusters() &&
      call.rows > call.tuning.staged_one_cta_min_rows_per_sm * call.limits.sm_count;
  return staged_instead ? call.choose(configs::staged_40KB) : call.choose(configs::widest_one_cta);
}

/// Whether `windows` fill `ctas` CTAs of `capacity` windows so that the last holds at most
/// `share` of its slots.
constexpr bool last_cta_at_most(std::int64_t windows, std::int64_t ctas, std::int64_t capacity,
                                ratio share) noexcept {
  return share.den * windows <= ((ctas - 1) * share.den + share.num) * capacity;
}

/// 16-bit forward rows beyond one CTA: the fewest staged CTAs that hold the row, of 32 KB, or,
/// where those do not, of 40, 48 or 64 KB, the smallest that do; and rows of three or four 32 KB
/// CTAs of which the last is nearly empty in CTAs of 40 KB
/// (planner_tuning::staged40_instead_of_32KB). Their registers free of row data, an SM runs more
/// CTAs with more of the row in flight than register clusters (tuning log, staged rows).
constexpr std::optional<plan> staged_16bit_plan(plan_call const& call) noexcept {
  const std::int64_t capacity32 = call.capacity(configs::staged_32KB);
  const std::int64_t ctas32 = call.ctas(configs::staged_32KB);
  const std::int64_t ctas40 = call.ctas(configs::staged_40KB);
  for (nearly_empty_last_cta const& rule : call.tuning.staged40_instead_of_32KB)
    if (ctas32 == rule.ctas && ctas40 <= call.max_cluster &&
        last_cta_at_most(call.windows, rule.ctas, capacity32, rule.last_at_most))
      return call.choose(configs::staged_40KB, ctas40);
  for (int config :
       {configs::staged_32KB, configs::staged_40KB, configs::staged_48KB, configs::staged_64KB})
    if (call.ctas(config) <= call.max_cluster) return call.choose(config, call.ctas(config));
  return std::nullopt;
}

/// fp32 forward rows of planner_tuning::fp32_staged_min_ctas and more staged CTAs of 32 KB (or
/// one fewer, nearly full) in mid-sized launches: staged as well. An SM runs more of them than
/// register cluster CTAs, so such launches take fewer waves; in full launches the two are even
/// (tuning log, staged rows).
constexpr std::optional<plan> staged_fp32_plan(plan_call const& call) noexcept {
  planner_tuning const& tuning = call.tuning;
  const std::int64_t ctas = call.ctas(configs::staged_32KB);
  const ratio fill = tuning.fp32_staged_fewer_ctas_fill;
  const bool full =
      ctas >= tuning.fp32_staged_min_ctas ||
      (ctas == tuning.fp32_staged_min_ctas - 1 &&
       fill.den * call.windows > fill.num * ctas * call.capacity(configs::staged_32KB));
  if (full && ctas <= call.max_cluster &&
      !call.launch_at_most(ctas, tuning.fp32_staged_launch_above_per_sm) &&
      call.launch_at_most(ctas, tuning.fp32_staged_launch_at_most_per_sm))
    return call.choose(configs::staged_32KB, ctas);
  return std::nullopt;
}

/// Forward rows in register clusters of 256 or 288 bytes a thread: rows that 128 bytes a thread
/// do not hold, and rows of many CTAs in full launches (twice the bytes in flight a thread;
/// planner_tuning::wide_cluster_*); fp32 at 288 bytes where that takes fewer CTAs that fill the
/// device about as fully at once (planner_tuning::cluster288_fill_slack_permille) or 256 does not
/// hold the row (tuning log, register clusters).
constexpr std::optional<plan> wide_cluster_plan(plan_call const& call, int narrower,
                                                bool held) noexcept {
  planner_tuning const& tuning = call.tuning;
  const std::int64_t ctas = call.ctas(narrower);
  const bool narrow = narrower == configs::cluster_128t;
  const ratio of_sms = tuning.wide_cluster_launch_of_sms;
  const bool full_launch =
      narrow ? !call.launch_at_most(ctas, tuning.wide_cluster_narrow_launch_per_sm)
             : of_sms.den * call.rows * ctas > of_sms.num * call.limits.sm_count;
  if (!call.forward() || (held && !(ctas > tuning.wide_cluster_beyond_ctas && full_launch)))
    return std::nullopt;
  const std::int64_t ctas256 = call.ctas(configs::cluster_256t_256B);
  const std::int64_t ctas288 = call.ctas(configs::cluster_256t_288B);
  const bool as_full =
      ctas256 <= call.max_cluster && cluster_fill(call.limits, static_cast<int>(ctas288)) +
                                             tuning.cluster288_fill_slack_permille >=
                                         cluster_fill(call.limits, static_cast<int>(ctas256));
  if (call.fp32() && ctas288 <= call.max_cluster &&
      (ctas256 > call.max_cluster || (ctas288 < ctas256 && as_full)))
    return call.choose(configs::cluster_256t_288B, ctas288);
  if (ctas256 <= call.max_cluster) return call.choose(configs::cluster_256t_256B, ctas256);
  return std::nullopt;
}

/// Rows beyond one CTA on a vectorised call: without clusters one 512-thread CTA where it holds
/// the row; with clusters, few forward rows in the most 128-thread CTAs, staged rows
/// (staged_16bit_plan, staged_fp32_plan), then register clusters: the fewest CTAs of 256
/// threads, or of 128 where that leaves fewer slots idle; wider ones forward
/// (wide_cluster_plan); 16-bit backward rows of 11 or 12 CTAs in full launches stream instead
/// (planner_tuning::backward16_streams_cluster_ctas_*); backward rows that 128 bytes a thread do
/// not hold at 144 (tuning log, register clusters).
constexpr std::optional<plan> cluster_plan(plan_call const& call) noexcept {
  if (!call.has_clusters())
    return call.fits(configs::one_cta_512) ? std::optional<plan>(call.choose(configs::one_cta_512))
                                           : std::nullopt;
  if (few_forward_rows(call) && call.ctas(configs::cluster_128t) <= call.max_cluster)
    return call.choose(configs::cluster_128t, call.ctas(configs::cluster_128t));
  if (call.forward() && !call.fp32())
    if (auto p = staged_16bit_plan(call)) return p;
  if (call.forward() && call.fp32())
    if (auto p = staged_fp32_plan(call)) return p;
  const bool held = call.windows <= call.capacity(configs::cluster_256t, call.max_cluster);
  const bool narrow = call.ctas(configs::cluster_128t) <= call.max_cluster &&
                      call.ctas(configs::cluster_128t) * call.capacity(configs::cluster_128t) <
                          call.ctas(configs::cluster_256t) * call.capacity(configs::cluster_256t);
  const int config = narrow ? configs::cluster_128t : configs::cluster_256t;
  if (auto p = wide_cluster_plan(call, config, held)) return p;
  const std::int64_t ctas256 = call.ctas(configs::cluster_256t);
  const bool streams = !call.forward() && !call.fp32() &&
                       ctas256 >= call.tuning.backward16_streams_cluster_ctas_first &&
                       ctas256 <= call.tuning.backward16_streams_cluster_ctas_last &&
                       !call.launch_at_most(ctas256, 1);
  if (held && !streams) return call.choose(config, call.ctas(config));
  if (!call.forward() && !held && call.fits(configs::cluster_256t_144B, call.max_cluster))
    return call.choose(configs::cluster_256t_144B, call.ctas(configs::cluster_256t_144B));
  return std::nullopt;
}

/// Rows no register tier holds: streamed, read once where the CTAs of a cluster hold the row in
/// registers and shared memory. Given a workspace (or out of place on a device with clusters,
/// the workspace kept in the output's first row), rows that streaming reads twice
/// (streams_partly_twice aside) are split over many CTAs instead: 16-bit forward rows staged
/// where the device holds enough of them in shared memory (make_staged_split_plan), others split
/// (make_split_plan; tuning log, split rows).
constexpr plan long_row_plan(plan_call const& call) noexcept {
  const plan streaming = make_streaming_plan(call.dir, call.layout, call.rows, call.windows,
                                             call.elem_size, call.limits, call.max_cluster);
  const bool streams =
      reads_once(streaming, call.dir, call.elem_size) ||
      streams_partly_twice(streaming, call.dir, call.rows, call.elem_size, call.limits);
  const bool in_output = !call.with_workspace && call.layout.out_of_place && call.has_clusters();
  if (streams || !(call.with_workspace || in_output)) return streaming;
  plan p{};
  if (call.forward() && !call.fp32() && call.vectorized() &&
      call.limits.compute_capability >= cluster_compute_capability)
    p = make_staged_split_plan(call.layout, call.rows, call.windows, call.elem_size, call.limits);
  if (p.split_ctas < 2)
    p = make_split_plan(call.dir, call.layout, call.rows, call.windows, call.elem_size,
                        call.limits);
  p.workspace_in_output = in_output;
  const bool workspace_fits =
      call.with_workspace || call.cols * static_cast<std::int64_t>(call.elem_size) >=
                                 p.workspace_bytes + workspace_alignment;
  return p.split_ctas >= 2 && workspace_fits ? p : streaming;
}

}  // namespace detail

/// The plan the launchers use for `rows` rows of `cols` elements of `elem_size` bytes.
///
/// Pure and constexpr: depends only on its arguments. The tiers, tried in turn (detail::):
/// - short rows (at most 16 vectors: 128 16-bit or 64 fp32 elements), one vector a thread and 8
///   rows a thread, tiled through shared memory where misaligned and contiguous
///   (short_row_plan);
/// - one CTA a row, the smallest configuration that holds it (one_cta_plan);
/// - a cluster of CTAs (sm_90+): register clusters, or for forward rows the staged clusters that
///   hold the row in shared memory; one 512-thread CTA without clusters (cluster_plan);
/// - longer rows stream in tiles through the fewest CTAs of a cluster that keep the row on
///   chip, or through as many as allowed, reading the overflow twice; given a workspace
///   (`with_workspace`), or out of place (`layout.out_of_place`) on devices with clusters, they
///   are split over many CTAs instead (long_row_plan; see `algorithm::split`,
///   `algorithm::staged_split`, `plan::workspace_in_output`).
/// The scalar fallback (`layout.vec == 1`, 32 elements a thread of any type) has the one-CTA
/// configurations and streams beyond (or splits, as above). Thresholds come from the device's
/// tuning record (detail::tuning_for), configurations from detail::kernel_configs, and a plan
/// only names a configuration that has a kernel for the call (detail::has_kernel).
/// @pre rows >= 1, cols >= 1, elem_size in {2, 4}, layout.vec in {1, 16 / elem_size}.
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, std::size_t elem_size,
                        row_layout layout, device_limits const& limits,
                        bool with_workspace = false) noexcept {
  const std::int64_t head = layout.shifted ? layout.vec - 1 : 0;
  const detail::plan_call call{dir,
                               rows,
                               cols,
                               elem_size,
                               layout,
                               limits,
                               with_workspace,
                               detail::tuning_for(limits.compute_capability),
                               detail::ceil_div(cols + head, layout.vec),
                               limits.compute_capability >= detail::cluster_compute_capability
                                   ? limits.max_cluster_size
                                   : 1};
  if (auto p = detail::short_row_plan(call)) return *p;
  if (auto p = detail::one_cta_plan(call)) return *p;
  if (call.vectorized())
    if (auto p = detail::cluster_plan(call)) return *p;
  return detail::long_row_plan(call);
}

/// `plan_for` with the element size taken from `T` (float, __half or __nv_bfloat16).
template <class T>
constexpr plan plan_for(direction dir, std::int64_t rows, std::int64_t cols, row_layout layout,
                        device_limits const& limits, bool with_workspace = false) noexcept {
  return plan_for(dir, rows, cols, sizeof(T), layout, limits, with_workspace);
}

/// The name of an algorithm, as to_string(plan) begins: "registers", "cluster", "streaming",
/// "split", "staged" or "staged split".
inline const char* to_string(algorithm a) noexcept {
  return a == algorithm::registers   ? "registers"
         : a == algorithm::cluster   ? "cluster"
         : a == algorithm::streaming ? "streaming"
         : a == algorithm::split     ? "split"
         : a == algorithm::staged    ? "staged"
                                     : "staged split";
}

/// A one-line description of a plan, e.g. "cluster x16 cta=256 tpr=256 vec=8x8", with
/// " rows=N" for threads that hold N short rows, " tiled" for rows copied through shared memory,
/// " head" for rows that peel a misaligned head, " stash=N" for tiles kept in shared memory,
/// " halves=N" for tiles of which a backward split CTA keeps dy alone there (plan::stash_halves),
/// " hinted" for split CTAs that give L2 hints (detail::configs::split_hinted) and
/// " workspace=output" for a split's workspace kept in the output.
inline std::string to_string(plan const& p) {
  std::string s = to_string(p.algo);
  if (p.cluster_size > 1) s += " x" + std::to_string(p.cluster_size);
  if (p.algo == algorithm::split || p.algo == algorithm::staged_split)
    s += " " + std::to_string(p.row_groups) + "x" + std::to_string(p.split_ctas) + " ctas";
  s += " cta=" + std::to_string(p.threads_per_cta) + " tpr=" + std::to_string(p.threads_per_row) +
       " vec=" + std::to_string(p.vec) + "x" + std::to_string(p.vecs_per_thread);
  if (p.rows_per_thread > 1) s += " rows=" + std::to_string(p.rows_per_thread);
  if (p.tiled) s += " tiled";
  if (p.shifted) s += " head";
  if (p.stash_tiles > 0) s += " stash=" + std::to_string(p.stash_tiles);
  if (p.stash_halves > 0) s += " halves=" + std::to_string(p.stash_halves);
  if (p.config >= 0 && p.config < detail::num_kernel_configs &&
      detail::kernel_configs[p.config].l2_hints)
    s += " hinted";
  if (p.workspace_in_output) s += " workspace=output";
  return s;
}

}  // namespace rowsoftmax
