// SPDX-License-Identifier: Apache-2.0
// The fixed sweep of planner calls whose plans tests/golden/plans.txt records: every cols in
// 1..2^20 and a grid of long rows up to 2^24 + 3, both element sizes, both directions, every
// layout, with and without a workspace, on the H200, an sm_80 device without clusters and a few
// odd devices. Each line of the file is a hash of the plans of one block of calls, so that a
// planner change that moves any plan fails the test and names the block.
#pragma once

#include <rowsoftmax/plan.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace rowsoftmax::golden {

struct device_case {
  const char* name;
  device_limits limits;
};

inline std::vector<device_case> sweep_devices() {
  device_limits h200{};
  device_limits portable{};  // Hopper where the non-portable cluster size 16 is refused
  portable.max_cluster_size = 8;
  device_limits a100{};
  a100.sm_count = 108;
  a100.compute_capability = 80;
  a100.max_cluster_size = 1;
  a100.shared_bytes_per_sm = 167936;
  a100.shared_bytes_per_cta = 166912;
  for (int& c : a100.clusters_at_two_an_sm) c = 0;
  device_limits small{};  // a small Hopper part: 66 SMs, clusters up to 8, less shared memory
  small.sm_count = 66;
  small.max_cluster_size = 8;
  small.shared_bytes_per_sm = 101376;
  small.shared_bytes_per_cta = 99328;
  for (int n = 0; n <= 16; ++n) small.clusters_at_two_an_sm[n] = n <= 8 ? 132 / (n ? n : 1) - n : 0;
  small.clusters_at_two_an_sm[0] = 0;
  device_limits odd{};  // an SM count no cluster size divides evenly, a stash-less shared memory
  odd.sm_count = 77;
  odd.shared_bytes_per_sm = 65536;
  odd.shared_bytes_per_cta = 49152;
  for (int& c : odd.clusters_at_two_an_sm) c = 0;
  return {{"h200", h200}, {"hopper8", portable}, {"a100", a100}, {"small", small}, {"odd", odd}};
}

struct layout_case {
  const char* name;
  bool scalar, shifted, contiguous, out_of_place;
};

inline constexpr layout_case sweep_layouts[] = {
    {"aligned", false, false, false, false},
    {"aligned-oop", false, false, false, true},
    {"contig", false, false, true, true},
    {"shifted", false, true, false, false},
    {"shifted-oop", false, true, false, true},
    {"shifted-contig", false, true, true, false},
    {"shifted-contig-oop", false, true, true, true},
    {"scalar", true, false, false, false},
    {"scalar-oop", true, false, true, true},
};

/// Long rows: 2^20 .. 2^24 and their quarters, each +-3, and the shapes the tuning log names.
inline std::vector<std::int64_t> long_cols() {
  std::vector<std::int64_t> v;
  for (int k = 20; k <= 24; ++k)
    for (int quarter = 4; quarter <= 7; ++quarter) {
      if (k == 24 && quarter > 4) break;
      const std::int64_t base = (std::int64_t{quarter} << k) / 4;
      for (int d = -3; d <= 3; ++d)
        if (base + d > (std::int64_t{1} << 20)) v.push_back(base + d);
    }
  for (std::int64_t c :
       {1100000, 2000000, 3000000, 3145728, 3400000, 4500000, 5800000, 6291456, 9000000, 12000000})
    v.push_back(c);
  return v;
}

/// FNV-1a over 64-bit words.
struct hasher {
  std::uint64_t h = 1469598103934665603ull;
  void add(std::int64_t x) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<std::uint64_t>(x >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
};

/// Every field of a plan and of the kernel configuration it names (by its contents, not its
/// position in the table, so that the table may be reordered).
template <class ConfigKey>
void add_plan(hasher& h, plan const& p, ConfigKey const& config_key) {
  config_key(h, p);
  for (std::int64_t x :
       {std::int64_t(p.algo), std::int64_t(p.vec), std::int64_t(p.shifted),
        std::int64_t(p.threads_per_row), std::int64_t(p.vecs_per_thread),
        std::int64_t(p.rows_per_thread), std::int64_t(p.tiled), std::int64_t(p.rows_per_cta),
        std::int64_t(p.threads_per_cta), std::int64_t(p.cluster_size), p.windows, p.grid_ctas,
        std::int64_t(p.split_ctas), std::int64_t(p.row_groups), std::int64_t(p.stash_tiles),
        std::int64_t(p.stash_halves), p.workspace_bytes, std::int64_t(p.workspace_in_output)})
    h.add(x);
}

inline constexpr std::int64_t sweep_rows[] = {1, 7, 64, 1000, 4000};
inline constexpr std::int64_t block_cols = std::int64_t{1} << 16;
inline constexpr std::int64_t dense_cols = std::int64_t{1} << 20;

/// One line of the golden file: the plans of one block of calls.
struct block {
  device_case device;
  std::int64_t rows;
  direction dir;
  std::size_t elem;
  layout_case layout;
  bool with_workspace;
  std::int64_t first_cols;  ///< every cols in [first_cols, first_cols + block_cols); 0: long_cols
};

/// The sweep's blocks in file order. The H200 takes every cols up to 2^20 at every row count,
/// the other devices at 7 rows; every device takes the long grid at every row count.
inline std::vector<block> sweep_blocks() {
  std::vector<block> out;
  bool first_device = true;
  for (auto const& d : sweep_devices()) {
    for (std::int64_t rows : sweep_rows) {
      const bool dense = first_device || rows == 7;
      for (direction dir : {direction::forward, direction::backward})
        for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
          for (auto const& l : sweep_layouts)
            for (bool ws : {false, true}) {
              if (dense)
                for (std::int64_t start = 1; start <= dense_cols; start += block_cols)
                  out.push_back({d, rows, dir, elem, l, ws, start});
              out.push_back({d, rows, dir, elem, l, ws, 0});
            }
    }
    first_device = false;
  }
  return out;
}

/// The golden line of block `b`: "device rows dir elem layout workspace first-cols|long hash".
template <class ConfigKey>
std::string line_of(block const& b, ConfigKey const& config_key) {
  row_layout layout;
  layout.vec = b.layout.scalar ? 1 : static_cast<int>(16 / b.elem);
  layout.shifted = b.layout.shifted;
  layout.contiguous = b.layout.contiguous;
  layout.out_of_place = b.layout.out_of_place;
  hasher h;
  auto add = [&](std::int64_t cols) {
    add_plan(h, plan_for(b.dir, b.rows, cols, b.elem, layout, b.device.limits, b.with_workspace),
             config_key);
  };
  if (b.first_cols > 0)
    for (std::int64_t cols = b.first_cols; cols < b.first_cols + block_cols; ++cols) add(cols);
  else
    for (std::int64_t cols : long_cols()) add(cols);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %lld %s %zu %s %d %s %016llx", b.device.name,
                static_cast<long long>(b.rows), b.dir == direction::forward ? "fwd" : "bwd", b.elem,
                b.layout.name, b.with_workspace ? 1 : 0,
                b.first_cols > 0 ? std::to_string(b.first_cols).c_str() : "long",
                static_cast<unsigned long long>(h.h));
  return buf;
}

/// Every line of the sweep, computed on `threads` threads, in file order.
template <class ConfigKey>
std::vector<std::string> sweep_lines(ConfigKey const& config_key, unsigned threads) {
  const auto blocks = sweep_blocks();
  std::vector<std::string> lines(blocks.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < (threads ? threads : 1); ++w)
    workers.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < blocks.size();)
        lines[i] = line_of(blocks[i], config_key);
    });
  for (auto& t : workers) t.join();
  return lines;
}

}  // namespace rowsoftmax::golden
