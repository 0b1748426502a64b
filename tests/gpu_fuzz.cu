// SPDX-License-Identifier: Apache-2.0
// GPU differential fuzzer: random calls of the public launchers (softmax forward and backward
// for float, __half and __nv_bfloat16, with and without a workspace, and the fused bf16
// log-softmax with random options, masked in about half its calls) checked against the float64
// reference for a time budget.
// Every output buffer is poisoned with NaN first, every byte outside the rows is checked
// untouched (compare), and the inputs are checked unchanged. Before each call the plan the
// launcher takes is queried and recorded; at the start the configurations the planner can choose
// on this device are computed (a host-only sweep of plan_for), and every other call is drawn
// from an example of one not yet reached (then one call in three from any), so that the default
// budget reaches them all.
//
//   rowsoftmax_gpu_fuzz [--seconds N] [--seed S] [--only K] [--verbose]
//   rowsoftmax_gpu_fuzz --list-reachable  (the reachable configurations, an example of each)
//   rowsoftmax_gpu_fuzz --dry-run N       (calls 0..N-1 drawn on the host only: when their
//                                          plans reach every reachable configuration)
//
// Call K of a run is drawn from its own generator, seeded by (S, K) and by the configurations
// the calls before it were planned to reach (replayed on the host, no launch), so
// `--seed S --only K` runs exactly call K of that run again. Exit status 1 where a call failed,
// else 3 where a reachable configuration was not reached (INCOMPLETE: the budget was too short),
// else 0. Without a CUDA device it prints
// "no CUDA device: GPU fuzz skipped" and exits 0 (`--list-reachable` then sweeps the default
// device_limits, those of the H200, and so does `--dry-run`).
//
// Compile once: this unit compiles no kernel. extern_fused.cuh declares the launchers and the
// fused ops' kernels; rowsoftmax_warnings (warnings_tu.cu) and rowsoftmax_fused_instances, linked
// in, define them.
#include <rowsoftmax/extern_fused.cuh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fused_tests.cuh"
#include "gpu_harness.cuh"
#include "reference.hpp"

namespace rowsoftmax::test {
namespace {

using i64 = std::int64_t;

/// Elements a tensor's rows span at most (rows * row stride): one call stays fast, rows shrink
/// as cols grow.
constexpr i64 max_elements = i64{1} << 26;
/// Rows drawn at most.
constexpr i64 max_rows_drawn = i64{1} << 22;
/// Columns drawn at most: 2^24 and an odd few, misaligned for every vector width.
constexpr i64 max_cols = (i64{1} << 24) + 7;
/// Padding a row stride adds to cols at most (every geometry below stays under it).
constexpr i64 max_pad = 64;
/// Calls of at most this many elements have every row checked against the reference; larger
/// ones a sample of rows of about as many elements (the first and last rows always).
constexpr i64 full_check_elements = i64{1} << 22;
/// The run stops after this many failed calls.
constexpr int max_failures = 10;
/// A call that runs longer than this is taken for hung: the run stops with its repro line.
constexpr int hang_seconds = 180;

// ---------------------------------------------------------------------------------------------
// What a call is: element type, operation, geometry, launch, data and options.

constexpr int num_types = 3;  // float, __half, __nv_bfloat16
const char* type_name(int t) {
  return t == 0 ? "float" : t == 1 ? "half" : "bf16";
}
std::size_t elem_size_of(int t) {
  return t == 0 ? 4 : 2;
}
int vec_of_type(int t) {
  return static_cast<int>(16 / elem_size_of(t));
}

/// The operations called: plain forward and backward (every type), and the fused log-softmax
/// forward with options (bf16 only: the fused launcher warnings_tu.cu instantiates).
enum class op : int { forward, backward, log_fused };
constexpr int num_ops = 3;
const char* op_name(op o) {
  return o == op::forward ? "forward" : o == op::backward ? "backward" : "log-softmax (fused)";
}
direction dir_of(op o) {
  return o == op::backward ? direction::backward : direction::forward;
}
/// Tensors of a call: x, y (forward); dy, y, dx (backward). The output is the last.
int tensors_of(op o) {
  return o == op::backward ? 3 : 2;
}

constexpr int num_algorithms = 6;

/// A configuration by its record: family, threads a row, bytes a thread, and its variants.
std::string config_name(int c) {
  if (c < 0 || c >= detail::num_kernel_configs) return "config " + std::to_string(c);
  detail::kernel_config const& k = detail::kernel_configs[c];
  std::ostringstream s;
  s << "config " << c << " (" << to_string(k.algo) << " tpr=" << k.threads_per_row << " " << k.bytes
    << "B cta=" << k.threads_per_cta;
  if (k.rows_per_thread > 1) s << " rows=" << k.rows_per_thread;
  if (k.tiled) s << " tiled";
  if (k.l2_hints) s << " hinted";
  s << ")";
  return s.str();
}

/// The geometry classes: how the tensors' offsets (elements from a 256-byte aligned allocation)
/// and row strides are drawn. For given rows and cols, each of the first five gives one
/// row_layout whatever its jitter (the reachable sweep's examples are rebuilt from them);
/// `random` draws every tensor's offset and stride on its own.
enum class geo_class : int {
  contiguous,          ///< offsets 0, strides cols (misaligned rows where cols is not a vector)
  contiguous_shifted,  ///< one offset in 1..vec-1 for all, strides cols
  padded,              ///< offsets 0, strides past cols in whole vectors
  padded_shifted,      ///< one offset in 1..vec-1, strides past cols, all equal modulo the vector
  mixed,               ///< the output misaligned against the first input: the scalar fallback
  random,              ///< every offset and stride drawn on its own
};
constexpr int num_geo_classes = 6;
const char* geo_name(geo_class g) {
  switch (g) {
    case geo_class::contiguous:
      return "contiguous";
    case geo_class::contiguous_shifted:
      return "contiguous shifted";
    case geo_class::padded:
      return "padded";
    case geo_class::padded_shifted:
      return "padded shifted";
    case geo_class::mixed:
      return "mixed alignment";
    case geo_class::random:
      return "random";
  }
  return "?";
}

struct tensor_geo {
  i64 offset = 0;  ///< elements from the allocation's 256-byte aligned start
  i64 stride = 1;  ///< elements between row starts
};

/// Where a call's tensors lie. In place: the output is an input (same allocation, offset and
/// stride); 1: the first input (x, dy), 2: backward's y.
struct geometry {
  i64 rows = 1;
  i64 cols = 1;
  int tensors = 2;
  tensor_geo t[3];
  int in_place = 0;
  geo_class cls = geo_class::contiguous;
  int out() const { return tensors - 1; }
};

i64 round_up(i64 a, i64 b) {
  return (a + b - 1) / b * b;
}

/// The most rows a call of `cols` columns takes: rows * (cols + max_pad) within max_elements.
i64 max_rows_for(i64 cols) {
  return std::max<i64>(1, std::min(max_rows_drawn, max_elements / (cols + max_pad)));
}

/// The geometry of class `cls`; `jitter` draws the free choices (offsets, padding), nullptr
/// takes the first of each (the sweep's examples).
geometry make_geometry(geo_class cls, i64 rows, i64 cols, int vec, int tensors, int in_place,
                       rng* jitter) {
  auto pick = [&](i64 lo, i64 hi) { return jitter ? lo + jitter->below(hi - lo + 1) : lo; };
  geometry g;
  g.rows = rows;
  g.cols = cols;
  g.tensors = tensors;
  g.in_place = in_place;
  g.cls = cls;
  const i64 aligned = round_up(cols, vec);
  const int out = tensors - 1;
  switch (cls) {
    case geo_class::contiguous:
      for (int i = 0; i < tensors; ++i) g.t[i] = {0, cols};
      break;
    case geo_class::contiguous_shifted: {
      const i64 h = pick(1, vec - 1);
      for (int i = 0; i < tensors; ++i) g.t[i] = {h, cols};
      break;
    }
    case geo_class::padded:
      for (int i = 0; i < tensors; ++i) g.t[i] = {0, aligned + vec * pick(1, 4)};
      break;
    case geo_class::padded_shifted: {
      const i64 h = pick(1, vec - 1), d = pick(1, vec - 1);
      for (int i = 0; i < tensors; ++i) g.t[i] = {h, aligned + vec * pick(1, 4) + d};
      break;
    }
    case geo_class::mixed: {
      // The output's head differs from the first input's; backward's y takes either where the
      // output is no input, else the output's (in place on dy, y must differ from dy).
      const i64 a = pick(0, vec - 1), b = (a + pick(1, vec - 1)) % vec;
      for (int i = 0; i < tensors; ++i) g.t[i] = {a, cols + pick(0, 3 * vec)};
      g.t[out].offset = b;
      if (tensors == 3) g.t[1].offset = in_place != 0 || pick(0, 1) == 1 ? b : a;
      break;
    }
    case geo_class::random: {
      const bool same_offset = pick(0, 1) == 1, same_stride = pick(0, 2) == 0;
      const i64 o = pick(0, vec - 1);
      for (int i = 0; i < tensors; ++i) {
        g.t[i].offset = same_offset ? o : pick(0, vec - 1);
        g.t[i].stride = same_stride || pick(0, 2) == 0 ? cols : cols + pick(1, max_pad - 8);
      }
      break;
    }
  }
  if (in_place == 1) g.t[out] = g.t[0];
  if (in_place == 2) g.t[out] = g.t[1];
  return g;
}

/// The row_layout the launchers derive for geometry `g` (detail::layout_of on pointers of the
/// same alignment as the fuzzer's allocations: each tensor its own 256-byte aligned base).
row_layout layout_of_geometry(geometry const& g, std::size_t elem) {
  auto ptr = [&](int i) {
    const int base = g.in_place != 0 && i == g.out() ? g.in_place - 1 : i;
    return reinterpret_cast<void const*>((std::uintptr_t{1} + base) << 32 |
                                         static_cast<std::uintptr_t>(g.t[base].offset * elem));
  };
  if (g.tensors == 2) {
    const detail::tensor_arg t[2] = {{ptr(0), g.t[0].stride, false}, {ptr(1), g.t[1].stride, true}};
    return detail::layout_of(t, elem, g.rows, g.cols);
  }
  const detail::tensor_arg t[3] = {{ptr(0), g.t[0].stride, false},
                                   {ptr(1), g.t[1].stride, false},
                                   {ptr(2), g.t[2].stride, true}};
  return detail::layout_of(t, elem, g.rows, g.cols);
}

/// What goes into the inputs.
enum class fill_kind : int {
  uniform,    ///< forward: x in [-8, 8]; backward: logits in [-8, 8], dy in [-1, 1]
  wide,       ///< forward: x in [-100, 100]; backward: logits in [-40, 40] (sparse y)
  huge,       ///< forward: x of the type's largest magnitudes; backward: dy in [-1e4, 1e4]
  tiny,       ///< forward: x near 0 (subnormal in half); backward: dy near 0
  special,    ///< every row special: forward make_special_row's cycle; backward masked logits,
              ///< fully masked rows (y NaN), NaN and large dy, by row
  sprinkled,  ///< one row in 16 special, the others uniform
};
constexpr int num_fills = 6;
const char* fill_name(fill_kind f) {
  switch (f) {
    case fill_kind::uniform:
      return "uniform";
    case fill_kind::wide:
      return "wide";
    case fill_kind::huge:
      return "huge";
    case fill_kind::tiny:
      return "tiny";
    case fill_kind::special:
      return "special rows";
    case fill_kind::sprinkled:
      return "sprinkled special rows";
  }
  return "?";
}

/// How the call is launched.
enum class launch_kind : int { default_stream, own_stream, graph };
const char* launch_name(launch_kind l) {
  return l == launch_kind::default_stream ? "default stream"
         : l == launch_kind::own_stream   ? "non-blocking stream"
                                          : "CUDA graph (captured, replayed)";
}

struct call {
  i64 index = 0;
  int type = 0;
  op o = op::forward;
  geometry geo;
  bool workspace = false;  ///< the workspace overload: size query, then the call
  i64 ws_slack = 0;        ///< bytes given beyond the size asked for
  int ws_shift = 0;        ///< the workspace starts this many 8-byte words into its allocation
  bool stale = false;      ///< the workspace filled as an earlier call could have left it
  launch_kind launch = launch_kind::default_stream;
  fill_kind fill = fill_kind::uniform;
  i64 guard = 64;  ///< poisoned elements after each buffer's last row
  // The fused call's options.
  float scale = 1.0f;
  bool row_scale = false;
  bool lse = false;
  empty_rows empty = empty_rows::nan;
  // Its masks (the masked launcher where either is drawn), as fused_case says them.
  int lengths = 0;
  bool causal = false;
  int diagonal = 0;
  std::uint64_t data_seed = 0;
  std::string target;    ///< the reachable configuration the call was drawn for, if any
  int target_code = -1;  ///< its cover_key::code

  std::string str() const {
    static const char* const names[2][3] = {{"x", "y", ""}, {"dy", "y", "dx"}};
    const int n = o == op::backward ? 1 : 0;
    std::ostringstream s;
    s << "call " << index << ": " << type_name(type) << " " << op_name(o) << ", rows " << geo.rows
      << ", cols " << geo.cols << ", " << geo_name(geo.cls) << " geometry:";
    for (int i = 0; i < geo.tensors; ++i)
      s << " " << names[n][i] << " offset " << geo.t[i].offset << " stride " << geo.t[i].stride
        << (i + 1 < geo.tensors ? ";" : "");
    s << ", "
      << (geo.in_place == 0   ? "out of place"
          : geo.in_place == 1 ? (o == op::backward ? "in place (dx is dy)" : "in place (y is x)")
                              : "in place (dx is y)");
    if (workspace)
      s << ", workspace (+" << ws_slack << " bytes, at +" << 8 * ws_shift
        << (stale ? ", stale" : "") << ")";
    else
      s << ", no workspace";
    s << ", " << launch_name(launch) << ", fill " << fill_name(fill) << ", guard " << guard;
    if (o == op::log_fused)
      s << ", options: scale " << scale << (row_scale ? ", row_scale" : "")
        << (lse ? ", row_lse" : "") << ", empty rows "
        << (empty == empty_rows::zero ? "zero" : "nan")
        << (lengths != 0 ? ", lengths mode " + std::to_string(lengths) : "")
        << (causal ? ", causal diagonal mode " + std::to_string(diagonal) : "");
    s << ", data seed " << data_seed;
    if (!target.empty()) s << ", drawn for " << target;
    return s.str();
  }
};

// ---------------------------------------------------------------------------------------------
// Coverage: the configurations a plan names, and those the planner can choose on the device.

/// A plan as coverage counts it: the kernel it launches (configuration, scalar fallback or
/// vector, in clusters or not) and whether a split plan keeps its workspace in the output.
struct cover_key {
  int type = 0;
  op o = op::forward;
  int config = 0;
  bool scalar = false;
  bool clustered = false;
  bool in_output = false;

  int code() const {
    return ((((type * num_ops + static_cast<int>(o)) * 64 + config) * 2 + scalar) * 2 + clustered) *
               2 +
           in_output;
  }
  std::string str() const {
    std::ostringstream s;
    s << type_name(type) << " " << op_name(o) << " " << config_name(config)
      << (scalar ? " scalar" : " vector") << (clustered ? " clustered" : "")
      << (in_output ? " workspace=output" : "");
    return s.str();
  }
};
static_assert(detail::num_kernel_configs <= 64,
              "cover_key::code packs the configuration in 6 bits");

cover_key key_of(int type, op o, plan const& p) {
  return {type, o, p.config, p.vec == 1, p.cluster_size > 1, p.workspace_in_output};
}

/// One call that reaches a configuration: the geometry class and in-place choice to rebuild it
/// with, rows, cols and whether it takes a workspace.
struct example {
  i64 rows = 0;
  i64 cols = 0;
  geo_class cls = geo_class::contiguous;
  int in_place = 0;
  bool workspace = false;
  std::string str() const {
    std::ostringstream s;
    s << "rows " << rows << " cols " << cols << " " << geo_name(cls)
      << (in_place ? " in place" : "") << (workspace ? " with workspace" : "");
    return s.str();
  }
  /// Smaller calls first; the order is total, so the sweep's merge does not depend on threads.
  bool before(example const& e) const {
    return std::make_tuple(rows * cols, cols, rows, static_cast<int>(cls), in_place, workspace) <
           std::make_tuple(e.rows * e.cols, e.cols, e.rows, static_cast<int>(e.cls), e.in_place,
                           e.workspace);
  }
};

struct reachable_entry {
  cover_key key;
  example ex;
};

/// What the sweep finds: every configuration the planner chose with its smallest example, and
/// per element size the columns on both sides of each point where a plan changes.
struct sweep_result {
  std::map<int, reachable_entry> reachable;  // by cover_key::code
  std::vector<i64> thresholds[2];            // [0]: 2-byte elements, [1]: 4-byte
};

/// Columns the sweep visits: every one up to 256, then 1% apart, powers of two and their
/// neighbours, and max_cols. Plans change where a row's vector windows pass a configuration's
/// capacity, and capacities of neighbouring configurations differ by more than 10%.
std::vector<i64> sweep_cols() {
  std::vector<i64> c;
  for (i64 v = 1; v <= 256; ++v) c.push_back(v);
  for (i64 v = 256; v < max_cols; v = std::max(v + 1, static_cast<i64>(std::ceil(v * 1.01))))
    c.push_back(v);
  for (int k = 8; k <= 24; ++k)
    for (i64 d : {-1, 0, 1}) c.push_back((i64{1} << k) + d);
  c.push_back(max_cols);
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

/// Rows the sweep visits: 1 to 8, then 25% apart (each call's rows also at max_rows_for).
std::vector<i64> sweep_rows() {
  std::vector<i64> r;
  for (i64 v = 1; v <= 8; ++v) r.push_back(v);
  for (i64 v = 10; v <= max_rows_drawn; v = static_cast<i64>(std::ceil(v * 1.25))) r.push_back(v);
  return r;
}

/// The (class, in place) pairs of the sweep: every class but random, out of place and in place
/// (in place forward has no mixed alignment: the output is the input).
std::vector<std::pair<geo_class, int>> sweep_variants(direction dir) {
  std::vector<std::pair<geo_class, int>> v;
  for (int c = 0; c <= static_cast<int>(geo_class::mixed); ++c)
    for (int in_place = 0; in_place <= 1; ++in_place)
      if (!(dir == direction::forward && in_place == 1 && c == static_cast<int>(geo_class::mixed)))
        v.push_back({static_cast<geo_class>(c), in_place});
  return v;
}

/// A plan's coverage code within one (element size, direction) and what a threshold is: a change
/// of configuration, vector width, cluster size or workspace place.
int local_code(plan const& p) {
  return cover_key{0, op::forward, p.config, p.vec == 1, p.cluster_size > 1, p.workspace_in_output}
      .code();
}
std::tuple<int, int, int, bool> change_of(plan const& p) {
  return {p.config, p.vec, p.cluster_size, p.workspace_in_output};
}

/// One task of the sweep: plan_for over the grid for one element size, direction and workspace
/// choice. Returns the configurations found (by local_code) and the thresholds in columns.
void sweep_one(std::size_t elem, direction dir, bool workspace, device_limits const& limits,
               std::vector<i64> const& cols_grid, std::vector<i64> const& rows_grid,
               std::map<int, std::pair<plan, example>>& found, std::set<i64>& thresholds) {
  const int vec = static_cast<int>(16 / elem);
  const int tensors = dir == direction::forward ? 2 : 3;
  // Rows whose plans are followed along the columns for thresholds (a few, so the bisection
  // stays cheap).
  const i64 tracked[] = {1, 2, 3, 8, 64, 512, 4096, 32768};
  for (auto [cls, in_place] : sweep_variants(dir)) {
    auto plan_at = [&, cls = cls, in_place = in_place](i64 rows, i64 cols) {
      const geometry g = make_geometry(cls, rows, cols, vec, tensors, in_place, nullptr);
      return plan_for(dir, rows, cols, elem, layout_of_geometry(g, elem), limits, workspace);
    };
    std::map<i64, std::pair<i64, std::tuple<int, int, int, bool>>> last;  // rows -> (cols, change)
    for (i64 cols : cols_grid) {
      const i64 most = max_rows_for(cols);
      std::vector<i64> rows_list;
      for (i64 r : rows_grid)
        if (r <= most) rows_list.push_back(r);
      if (rows_list.back() != most) rows_list.push_back(most);
      for (i64 rows : rows_list) {
        const plan p = plan_at(rows, cols);
        const example e{rows, cols, cls, in_place, workspace};
        auto it = found.find(local_code(p));
        if (it == found.end())
          found.emplace(local_code(p), std::make_pair(p, e));
        else if (e.before(it->second.second))
          it->second = {p, e};
        if (std::find(std::begin(tracked), std::end(tracked), rows) == std::end(tracked)) continue;
        const auto change = change_of(p);
        auto prev = last.find(rows);
        if (prev != last.end() && prev->second.second != change) {
          i64 lo = prev->second.first, hi = cols;
          while (hi - lo > 1) {
            const i64 mid = lo + (hi - lo) / 2;
            if (change_of(plan_at(rows, mid)) == prev->second.second)
              lo = mid;
            else
              hi = mid;
          }
          thresholds.insert(lo);
          thresholds.insert(hi);
        }
        last[rows] = {cols, change};
      }
    }
  }
}

/// The configurations the planner can choose on a device of `limits` for calls the fuzzer
/// draws (at most max_elements a tensor): plan_for over the grid, for each element size,
/// direction, workspace choice, geometry class and in-place choice, one task a thread. Half and
/// bf16 share the 2-byte plans; the fused log-softmax (bf16, no workspace) takes the plain
/// forward's plans (its launcher plans the same rows the same way).
sweep_result sweep(device_limits const& limits) {
  const std::vector<i64> cols_grid = sweep_cols(), rows_grid = sweep_rows();
  struct task {
    std::size_t elem;
    direction dir;
    bool workspace;
    std::map<int, std::pair<plan, example>> found;
    std::set<i64> thresholds;
  };
  std::vector<task> tasks;
  for (std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (direction dir : {direction::forward, direction::backward})
      for (bool workspace : {false, true}) tasks.push_back({elem, dir, workspace, {}, {}});
  std::vector<std::thread> pool;
  for (auto& t : tasks)
    pool.emplace_back([&t, &limits, &cols_grid, &rows_grid] {
      sweep_one(t.elem, t.dir, t.workspace, limits, cols_grid, rows_grid, t.found, t.thresholds);
    });
  for (auto& th : pool) th.join();

  sweep_result out;
  auto add = [&](cover_key const& k, example const& e) {
    auto it = out.reachable.find(k.code());
    if (it == out.reachable.end())
      out.reachable.emplace(k.code(), reachable_entry{k, e});
    else if (e.before(it->second.ex))
      it->second.ex = e;
  };
  for (auto const& t : tasks) {
    const op o = t.dir == direction::forward ? op::forward : op::backward;
    for (auto const& [code, found] : t.found) {
      (void)code;
      for (int type = 0; type < num_types; ++type)
        if (elem_size_of(type) == t.elem) add(key_of(type, o, found.first), found.second);
      if (t.elem == 2 && o == op::forward && !t.workspace)
        add(key_of(2, op::log_fused, found.first), found.second);
    }
    auto& th = out.thresholds[t.elem == 4 ? 1 : 0];
    th.insert(th.end(), t.thresholds.begin(), t.thresholds.end());
  }
  for (auto& th : out.thresholds) {
    std::sort(th.begin(), th.end());
    th.erase(std::unique(th.begin(), th.end()), th.end());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The generator: call k from (seed, k) and the configurations calls 0..k-1 were planned to reach.

std::uint64_t call_seed(std::uint64_t seed, i64 k) {
  rng g(seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(k + 1)));
  return g.next();
}

/// Log-uniform in [1, most].
i64 log_uniform(rng& g, i64 most) {
  const double v = std::exp(g.uniform() * std::log(static_cast<double>(most) + 1.0));
  return std::clamp<i64>(static_cast<i64>(v), 1, most);
}

class generator {
 public:
  generator(std::uint64_t seed, sweep_result const& s, device_limits const& limits)
      : seed_(seed), sweep_(s), limits_(limits) {
    for (auto const& [code, e] : s.reachable) {
      (void)e;
      order_.push_back(code);
    }
  }

  /// Call k (calls must be drawn in order 0, 1, 2, ...: each depends on those before).
  call next(i64 k) {
    rng g(call_seed(seed_, k));
    call c;
    c.index = k;
    std::vector<int> open;
    for (int code : order_)
      if (!planned_.count(code)) open.push_back(code);
    // While some configuration has no call planned to reach it, every other call rebuilds an
    // example of one of those; then every third call one of any reachable configuration. The
    // others are drawn whole.
    if (!order_.empty() && (open.empty() ? k % 3 == 0 : k % 2 == 0)) {
      const int code =
          open.empty() ? order_[static_cast<std::size_t>(g.below(static_cast<i64>(order_.size())))]
                       : open[static_cast<std::size_t>(g.below(static_cast<i64>(open.size())))];
      reachable_entry const& e = sweep_.reachable.at(code);
      from_example(c, e, g);
    } else {
      draw(c, g);
    }
    draw_rest(c, g);
    planned_.insert(key_of(c.type, c.o, predicted_plan(c)).code());
    return c;
  }

  /// The plan the launcher takes for `c` as plan_for gives it (the launchers' plan unless the
  /// device cannot run it: detail::choose_plan).
  plan predicted_plan(call const& c) const {
    const std::size_t elem = elem_size_of(c.type);
    return plan_for(dir_of(c.o), c.geo.rows, c.geo.cols, elem, layout_of_geometry(c.geo, elem),
                    limits_, c.workspace);
  }

 private:
  void from_example(call& c, reachable_entry const& e, rng& g) {
    c.type = e.key.type;
    c.o = e.key.o;
    c.workspace = e.ex.workspace;
    c.target = e.key.str();
    c.target_code = e.key.code();
    const i64 cols = e.ex.cols;
    i64 rows = e.ex.rows;
    if (g.below(2) == 1)  // half the time the rows jittered within -20%..+25%
      rows =
          std::clamp<i64>(static_cast<i64>(static_cast<double>(rows) * (0.8 + 0.45 * g.uniform())),
                          1, max_rows_for(cols));
    // Backward in place: on dy or on y, the same layout.
    const int in_place = e.ex.in_place == 1 && c.o == op::backward
                             ? 1 + static_cast<int>(g.below(2))
                             : e.ex.in_place;
    c.geo = make_geometry(e.ex.cls, rows, cols, vec_of_type(c.type), tensors_of(c.o), in_place, &g);
  }

  i64 draw_cols(rng& g, int type) const {
    const int vec = vec_of_type(type);
    auto const& th = sweep_.thresholds[elem_size_of(type) == 4 ? 1 : 0];
    i64 cols = 1;
    const i64 r = g.below(20);
    if (r < 8) {
      cols = log_uniform(g, max_cols);
    } else if (r < 12) {  // at, just below or just above a power of two
      const i64 p = i64{1} << g.below(25);
      const i64 d[] = {-2, -1, 0, 0, 1, 2, -vec, vec, 1 - vec, vec - 1};
      cols = p + d[g.below(10)];
    } else if (r < 18 && !th.empty()) {  // at or next to a point where a plan changes
      cols = th[static_cast<std::size_t>(g.below(static_cast<i64>(th.size())))] + g.below(5) - 2;
    } else {
      cols = 1 + g.below(300);
    }
    return std::clamp<i64>(cols, 1, max_cols);
  }

  void draw(call& c, rng& g) {
    const i64 r = g.below(20);
    c.o = r < 9 ? op::forward : r < 17 ? op::backward : op::log_fused;
    c.type = c.o == op::log_fused ? 2 : static_cast<int>(g.below(num_types));
    c.workspace = c.o != op::log_fused && g.below(5) < 2;
    const i64 cols = draw_cols(g, c.type);
    const i64 most = max_rows_for(cols);
    // Rows: one, the most, log-uniform up to the most or (to keep calls cheap) up to 2048.
    const i64 pick_rows = g.below(20);
    const i64 rows = pick_rows == 0   ? 1
                     : pick_rows == 1 ? most
                     : pick_rows < 11 ? log_uniform(g, most)
                                      : log_uniform(g, std::min<i64>(most, 2048));
    const i64 weights[num_geo_classes] = {20, 12, 18, 12, 10, 28};
    i64 w = g.below(100);
    int cls = 0;
    while (w >= weights[cls]) w -= weights[cls++];
    int in_place = 0;
    const i64 ip = g.below(100);
    if (c.o == op::backward)
      in_place = ip < 12 ? 1 : ip < 20 ? 2 : 0;
    else if (cls != static_cast<int>(geo_class::mixed))
      in_place = ip < 25 ? 1 : 0;
    c.geo = make_geometry(static_cast<geo_class>(cls), rows, cols, vec_of_type(c.type),
                          tensors_of(c.o), in_place, &g);
  }

  /// The launch, data and options, whichever way the geometry was drawn.
  void draw_rest(call& c, rng& g) {
    if (c.workspace) {
      c.ws_slack = g.below(2) == 0 ? 0 : g.below(4096);
      c.ws_shift = static_cast<int>(g.below(4));
      c.stale = g.below(2) == 1;
    }
    const i64 l = g.below(20);
    c.launch = l < 11   ? launch_kind::default_stream
               : l < 15 ? launch_kind::own_stream
                        : launch_kind::graph;
    const i64 fills[num_fills] = {35, 10, 10, 10, 20, 15};
    i64 f = g.below(100);
    int fill = 0;
    while (f >= fills[fill]) f -= fills[fill++];
    c.fill = static_cast<fill_kind>(fill);
    c.guard = 1 + g.below(64);
    if (c.o == op::log_fused) {
      const i64 s = g.below(10);
      c.scale = s < 3    ? 1.0f
                : s == 3 ? 0.0f
                : s < 6  ? -static_cast<float>(0.05 + 4 * g.uniform())
                         : static_cast<float>(0.05 + 4 * g.uniform());
      c.row_scale = g.below(5) < 2;
      c.lse = g.below(2) == 1;
      c.empty = g.below(2) == 1 ? empty_rows::zero : empty_rows::nan;
      // Masked (the masked launcher) in about half the calls: lengths, causal or both.
      const i64 m = g.below(6);
      c.lengths = m == 1 || m == 3 ? 1 + static_cast<int>(g.below(3)) : 0;
      c.causal = m == 2 || m == 3;
      c.diagonal = static_cast<int>(g.below(3));
    }
    c.data_seed = g.next();
  }

  std::uint64_t seed_;
  sweep_result const& sweep_;
  device_limits limits_;
  std::vector<int> order_;
  std::set<int> planned_;
};

// ---------------------------------------------------------------------------------------------
// Running and checking one call.

std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

struct outcome {
  std::string error;  ///< "" where the call passed
  plan p;             ///< the launcher's plan (the plan query's)
  bool planned = false;
  bool sticky = false;  ///< the CUDA context is unusable (an error a synchronize still returns)

  /// Records `e` as the call's error where it is one; whether it was.
  bool failed(const char* what, cudaError_t e) {
    if (e == cudaSuccess) return false;
    error = cuda_error(what, e);
    return true;
  }
};

/// Runs `enqueue` as the call's launch kind asks, then waits for the device.
cudaError_t launch_as(launch_kind kind, std::function<cudaError_t(cudaStream_t)> const& enqueue) {
  cudaError_t err = cudaSuccess;
  if (kind == launch_kind::graph) {
    err = run_as_graph(enqueue);
  } else if (kind == launch_kind::own_stream) {
    cudaStream_t s = nullptr;
    err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = enqueue(s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (s) cudaStreamDestroy(s);
  } else {
    err = enqueue(nullptr);
  }
  const cudaError_t last = cudaGetLastError();
  if (err == cudaSuccess) err = last;
  const cudaError_t sync = cudaDeviceSynchronize();
  return err != cudaSuccess ? err : sync;
}

/// Marks the rows checked against the reference: all of a call of at most full_check_elements,
/// else the first, the last and a random sample of about as many elements.
std::vector<char> rows_to_check(i64 rows, i64 cols, rng& g) {
  if (rows * cols <= full_check_elements)
    return std::vector<char>(static_cast<std::size_t>(rows), 1);
  std::vector<char> check(static_cast<std::size_t>(rows), 0);
  check.front() = check.back() = 1;
  const i64 more = std::max<i64>(0, full_check_elements / cols - 2);
  for (i64 i = 0; i < more; ++i) check[static_cast<std::size_t>(g.below(rows))] = 1;
  return check;
}

/// Checks that every byte of `before` is unchanged in `after` (an input the call must not write).
template <class T>
std::string unchanged(std::vector<T> const& before, std::vector<T> const& after, const char* name) {
  if (before.size() != after.size()) return std::string(name) + ": size changed";
  const i64 n = static_cast<i64>(before.size());
  const i64 chunks = (n + host_chunk - 1) / host_chunk;
  std::vector<i64> first(static_cast<std::size_t>(chunks), -1);
  parallel_rows(chunks, [&](i64 c0, i64 c1) {
    for (i64 c = c0; c < c1; ++c) {
      const i64 a = c * host_chunk, b = std::min(n, a + host_chunk);
      if (std::memcmp(&before[static_cast<std::size_t>(a)], &after[static_cast<std::size_t>(a)],
                      static_cast<std::size_t>(b - a) * sizeof(T)) == 0)
        continue;
      for (i64 i = a; i < b; ++i)
        if (!same_bits(before[static_cast<std::size_t>(i)], after[static_cast<std::size_t>(i)])) {
          first[static_cast<std::size_t>(c)] = i;
          break;
        }
    }
  });
  for (i64 i : first)
    if (i >= 0) return std::string("input ") + name + " changed at element " + std::to_string(i);
  return "";
}

/// The workspace of a workspace call: the size query's bytes plus the call's slack, starting
/// `ws_shift` words into the allocation, filled stale where the call asks.
struct workspace_arg {
  std::size_t need = 0;
  std::size_t avail = 0;
  void* ptr = nullptr;
  std::unique_ptr<scratch> buf;

  /// The workspace of the size query's result (`query`, having set `need`), checked against the
  /// plan query's size; "" or what went wrong.
  std::string prepare(call const& c, cudaError_t query, plan const& p) {
    if (query != cudaSuccess) return cuda_error("workspace size query", query);
    if (need != static_cast<std::size_t>(p.workspace_bytes))
      return "workspace size query gave " + std::to_string(need) + " bytes, the plan query " +
             std::to_string(p.workspace_bytes);
    const cudaError_t e = make(c);
    return e == cudaSuccess ? "" : cuda_error("workspace", e);
  }

  cudaError_t make(call const& c) {
    const std::size_t shift = 8 * static_cast<std::size_t>(c.ws_shift);
    avail = need + static_cast<std::size_t>(c.ws_slack);
    buf = std::make_unique<scratch>(avail + shift);
    if (avail + shift > 0 && buf->ptr == nullptr) return cudaErrorMemoryAllocation;
    // A workspace of 0 bytes still needs a pointer to run (a null one is the size query): any.
    ptr = avail > 0 ? static_cast<char*>(buf->ptr) + shift : static_cast<void*>(&need);
    if (c.stale && avail >= 8) return make_stale(ptr, avail / 8 * 8);
    return cudaSuccess;
  }
};

/// Fills a forward input buffer (rows and padding) as the call's fill asks.
template <class T>
void fill_forward_input(std::vector<T>& x, call const& c, rng& g) {
  geometry const& geo = c.geo;
  const double huge = dtype<T>::huge;
  const double tiny = std::is_same_v<T, __half> ? 1e-6 : 1e-30;
  switch (c.fill) {
    case fill_kind::wide:
      fill_random(x, g, -100.0, 100.0);
      break;
    case fill_kind::huge:
      fill_random(x, g, -huge, huge);
      break;
    case fill_kind::tiny:
      fill_random(x, g, -tiny, tiny);
      break;
    default:
      fill_random(x, g, -8.0, 8.0);
      break;
  }
  if (c.fill == fill_kind::special || c.fill == fill_kind::sprinkled) {
    const i64 shift = g.below(8);
    for (i64 r = 0; r < geo.rows; ++r)
      if (c.fill == fill_kind::special || g.below(16) == 0)
        make_special_row(x, geo.t[0].offset + r * geo.t[0].stride, geo.cols, r + shift, g);
  }
}

/// The poison after the rows of the row LSE output (and all of it where not written).
constexpr i64 lse_guard = 16;

/// Forward for element type T: plain, or the fused log-softmax where `Fused` (a template
/// argument, so that the fused launcher is named for bf16 alone: the one linked).
template <class T, bool Fused>
outcome run_forward(call const& c) {
  constexpr bool fused = Fused;
  outcome out;
  geometry const& geo = c.geo;
  const bool in_place = geo.in_place != 0;
  shape s;
  s.rows = geo.rows;
  s.cols = geo.cols;
  s.guard = c.guard;
  const tensor_geo xg = geo.t[0], yg = geo.t[1];
  rng g(c.data_seed);

  std::vector<T> x(buffer_elems<T>(xg.offset, xg.stride, s));
  fill_forward_input(x, c, g);
  std::vector<T> y_init =
      in_place ? x : std::vector<T>(buffer_elems<T>(yg.offset, yg.stride, s), poison<T>());
  std::vector<float> rs, scales;
  fused_case fc;
  fc.scale = c.scale;
  fc.row_scales = c.row_scale;
  fc.lengths = c.lengths;
  fc.causal = c.causal;
  fc.diagonal = c.diagonal;
  if (fused) {
    rs = draw_row_scales(geo.rows, g);
    scales = row_scales_of(fc, rs, geo.rows);
  }
  // The masks and each row's kept columns (none masked: every column kept).
  const prefix_masks masks(fc, fused ? geo.rows : 0, geo.cols, g);

  device_buffer<T> x_buf(x.size()), y_buf(in_place ? 1 : y_init.size());
  device_buffer<float> rs_buf(fused ? rs.size() : 1);
  device_buffer<float> lse_buf(fused ? static_cast<std::size_t>(geo.rows + lse_guard) : 1);
  device_buffer<int> len_buf(std::max<std::size_t>(masks.lengths.size(), 1));
  if (!x_buf.ptr || !y_buf.ptr || !rs_buf.ptr || !lse_buf.ptr || !len_buf.ptr) {
    out.error = "cudaMalloc of the tensors failed";
    return out;
  }
  const std::vector<float> lse_init(lse_buf.n, poison<float>());
  cudaError_t e = x_buf.upload(x);
  if (e == cudaSuccess && !in_place) e = y_buf.upload(y_init);
  if (e == cudaSuccess && fused) e = rs_buf.upload(rs);
  if (e == cudaSuccess && fused) e = lse_buf.upload(lse_init);
  if (e == cudaSuccess && !masks.lengths.empty()) e = len_buf.upload(masks.lengths);
  if (out.failed("upload", e)) return out;
  T* xp = x_buf.ptr + xg.offset;
  T* yp = in_place ? xp : y_buf.ptr + yg.offset;
  softmax_options o;
  o.scale = c.scale;
  o.row_scale = c.row_scale ? rs_buf.ptr : nullptr;
  o.row_lse = c.lse ? lse_buf.ptr : nullptr;
  o.empty = c.empty;

  // The plan the launcher takes. The fused launcher plans its rows as the plain one does (the
  // same planner and layout; the plain query stands in for the fused one, which no linked unit
  // instantiates).
  e = softmax_forward_plan<T>(xp, xg.stride, yp, yg.stride, geo.rows, geo.cols, &out.p,
                              c.workspace);
  if (out.failed("softmax_forward_plan", e)) return out;
  out.planned = true;

  workspace_arg ws;
  if (c.workspace) {
    out.error = ws.prepare(c,
                           softmax_forward<T>(nullptr, &ws.need, xp, xg.stride, yp, yg.stride,
                                              geo.rows, geo.cols, nullptr),
                           out.p);
    if (!out.error.empty()) return out;
  }
  e = launch_as(c.launch, [&](cudaStream_t stream) {
    if constexpr (Fused) {
      if (fc.masked())
        return log_softmax_forward(xp, xg.stride, yp, yg.stride, geo.rows, geo.cols,
                                   masks.options(fc, o, len_buf.ptr), stream);
      return log_softmax_forward(xp, xg.stride, yp, yg.stride, geo.rows, geo.cols, o, stream);
    } else {
      if (c.workspace)
        return softmax_forward(ws.ptr, &ws.avail, xp, xg.stride, yp, yg.stride, geo.rows, geo.cols,
                               stream);
      return softmax_forward(xp, xg.stride, yp, yg.stride, geo.rows, geo.cols, stream);
    }
  });
  if (out.failed("launch", e)) {
    out.sticky = cudaDeviceSynchronize() != cudaSuccess;
    return out;
  }
  std::vector<T> y_out, x_after;
  std::vector<float> lse;
  e = in_place ? x_buf.download(y_out) : y_buf.download(y_out);
  if (e == cudaSuccess && !in_place) e = x_buf.download(x_after);
  if (e == cudaSuccess && fused) e = lse_buf.download(lse);
  if (out.failed("download", e)) return out;

  const std::vector<char> check = rows_to_check(geo.rows, geo.cols, g);
  std::vector<double> lse_ref(fused ? static_cast<std::size_t>(geo.rows) : 0);
  // Rows not sampled are compared with themselves (compare then checks only their sums and, for
  // every row, the bytes around them).
  auto ref_row = [&](i64 r, std::vector<double>& ref, std::vector<double>& scale) {
    const i64 ybase = yg.offset + r * yg.stride;
    if (!check[static_cast<std::size_t>(r)]) {
      for (i64 j = 0; j < geo.cols; ++j)
        ref[static_cast<std::size_t>(j)] =
            dtype<T>::to_double(y_out[static_cast<std::size_t>(ybase + j)]);
    } else if (fused) {
      thread_local std::vector<double> z;
      z.resize(static_cast<std::size_t>(geo.cols));
      const float sr = scales[static_cast<std::size_t>(r)];
      const i64 kept = masks.kept[static_cast<std::size_t>(r)];
      for (i64 j = 0; j < geo.cols; ++j)
        z[static_cast<std::size_t>(j)] =
            j >= kept ? -INFINITY
                      : logit(sr, dtype<T>::to_double(
                                      x[static_cast<std::size_t>(xg.offset + r * xg.stride + j)]));
      lse_ref[static_cast<std::size_t>(r)] = reference_fused_forward(z, true, c.empty, ref);
    } else {
      thread_local std::vector<double> xr;
      xr.resize(static_cast<std::size_t>(geo.cols));
      for (i64 j = 0; j < geo.cols; ++j)
        xr[static_cast<std::size_t>(j)] =
            dtype<T>::to_double(x[static_cast<std::size_t>(xg.offset + r * xg.stride + j)]);
      reference_forward(xr.data(), ref.data(), geo.cols);
    }
    // Log-softmax: the error of (z - M) - ln S is relative to the terms' size, at least 1.
    for (std::size_t j = 0; j < ref.size(); ++j)
      scale[j] = fused ? std::abs(ref[j]) + 1.0 : std::abs(ref[j]);
  };
  out.error = compare<T>(s, y_out, y_init, yg.offset, yg.stride, ref_row, !fused);
  long long bad_row = -1, bad_col = -1;
  if (fused && std::sscanf(out.error.c_str(), "row %lld col %lld", &bad_row, &bad_col) == 2) {
    // What the failing element's logit came from: x, the row's scale, the reference's max.
    const i64 xbase = xg.offset + bad_row * xg.stride;
    const float sr = scales[static_cast<std::size_t>(bad_row)];
    double m = -INFINITY;
    const i64 kept = masks.kept[static_cast<std::size_t>(bad_row)];
    for (i64 j = 0; j < kept; ++j)
      m = std::max(m, logit(sr, dtype<T>::to_double(x[static_cast<std::size_t>(xbase + j)])));
    std::ostringstream d;
    d << "; x " << dtype<T>::to_double(x[static_cast<std::size_t>(xbase + bad_col)])
      << ", row scale " << sr << ", reference max logit " << m << ", kept columns " << kept;
    if (c.lse) d << ", row_lse " << lse[static_cast<std::size_t>(bad_row)];
    out.error += d.str();
  }
  if (out.error.empty() && !in_place) out.error = unchanged(x, x_after, "x");
  if (out.error.empty() && fused) {
    for (i64 r = 0; r < geo.rows && c.lse && out.error.empty(); ++r) {
      if (!check[static_cast<std::size_t>(r)]) continue;
      const double want = lse_ref[static_cast<std::size_t>(r)];
      const double got = lse[static_cast<std::size_t>(r)];
      const bool ok = std::isnan(want) || std::isinf(want)
                          ? (std::isnan(want) && std::isnan(got)) || want == got
                          : std::abs(got - want) <= 4e-6 * (std::abs(want) + 1.0);
      if (!ok) {
        std::ostringstream m;
        m << "row " << r << ": row_lse " << got << ", reference " << want;
        out.error = m.str();
      }
    }
    for (std::size_t i = c.lse ? static_cast<std::size_t>(geo.rows) : 0;
         i < lse.size() && out.error.empty(); ++i)
      if (!same_bits(lse[i], lse_init[i]))
        out.error = "row_lse element " + std::to_string(i) + " written";
  }
  return out;
}

/// Backward for element type T: y the softmax of random logits (rounded to T), dy as the fill
/// asks.
template <class T>
outcome run_backward(call const& c) {
  outcome out;
  geometry const& geo = c.geo;
  shape s;
  s.rows = geo.rows;
  s.cols = geo.cols;
  s.guard = c.guard;
  const tensor_geo dyg = geo.t[0], yg = geo.t[1], dxg = geo.t[2];
  rng g(c.data_seed);

  std::vector<T> dy(buffer_elems<T>(dyg.offset, dyg.stride, s)),
      y(buffer_elems<T>(yg.offset, yg.stride, s));
  const double dy_range = c.fill == fill_kind::huge ? 1e4 : c.fill == fill_kind::tiny ? 1e-6 : 1.0;
  fill_random(dy, g, -dy_range, dy_range);
  fill_random(y, g, 0.0, 1.0);
  {
    const double logit_range = c.fill == fill_kind::wide ? 40.0 : 8.0;
    std::vector<std::uint64_t> row_seeds(static_cast<std::size_t>(geo.rows));
    for (auto& seed : row_seeds) seed = g.next();
    parallel_rows(
        geo.rows,
        [&](i64 r0, i64 r1) {
          std::vector<double> logits(static_cast<std::size_t>(geo.cols)), prob(logits.size());
          const double inf = std::numeric_limits<double>::infinity();
          for (i64 r = r0; r < r1; ++r) {
            rng gr(row_seeds[static_cast<std::size_t>(r)]);
            const bool special = c.fill == fill_kind::special ||
                                 (c.fill == fill_kind::sprinkled && gr.below(16) == 0);
            const i64 kind = special ? gr.below(6) : -1;
            for (auto& l : logits) l = (2 * gr.uniform() - 1) * logit_range;
            if (kind == 0)  // masked elements: y 0 there
              for (auto& l : logits)
                if (gr.uniform() < 0.5) l = -inf;
            if (kind == 1)  // a fully masked row: y NaN
              std::fill(logits.begin(), logits.end(), -inf);
            reference_forward(logits.data(), prob.data(), geo.cols);
            const i64 ybase = yg.offset + r * yg.stride, dybase = dyg.offset + r * dyg.stride;
            for (i64 j = 0; j < geo.cols; ++j)
              y[static_cast<std::size_t>(ybase + j)] =
                  dtype<T>::from_double(prob[static_cast<std::size_t>(j)]);
            if (kind == 2)  // a NaN in dy
              dy[static_cast<std::size_t>(dybase + gr.below(geo.cols))] =
                  dtype<T>::from_double(std::numeric_limits<double>::quiet_NaN());
            if (kind == 3)  // large dy
              for (i64 j = 0; j < geo.cols; ++j)
                dy[static_cast<std::size_t>(dybase + j)] =
                    dtype<T>::from_double(1e4 * (gr.uniform() - 0.5));
            if (kind == 4)  // constant dy: dx 0
              for (i64 j = 0; j < geo.cols; ++j)
                dy[static_cast<std::size_t>(dybase + j)] = dtype<T>::from_double(0.75);
          }
        },
        std::max<i64>(1, (i64{1} << 18) / geo.cols));
  }
  // The output buffer: dy's or y's in place, else its own, poisoned.
  std::vector<T> dx_init =
      geo.in_place == 1   ? dy
      : geo.in_place == 2 ? y
                          : std::vector<T>(buffer_elems<T>(dxg.offset, dxg.stride, s), poison<T>());

  device_buffer<T> dy_buf(dy.size()), y_buf(y.size()),
      dx_buf(geo.in_place != 0 ? 1 : dx_init.size());
  if (!dy_buf.ptr || !y_buf.ptr || !dx_buf.ptr) {
    out.error = "cudaMalloc of the tensors failed";
    return out;
  }
  cudaError_t e = dy_buf.upload(dy);
  if (e == cudaSuccess) e = y_buf.upload(y);
  if (e == cudaSuccess && geo.in_place == 0) e = dx_buf.upload(dx_init);
  if (out.failed("upload", e)) return out;
  T* dyp = dy_buf.ptr + dyg.offset;
  T* yp = y_buf.ptr + yg.offset;
  T* dxp = geo.in_place == 1 ? dyp : geo.in_place == 2 ? yp : dx_buf.ptr + dxg.offset;

  e = softmax_backward_plan<T>(dyp, dyg.stride, yp, yg.stride, dxp, dxg.stride, geo.rows, geo.cols,
                               &out.p, c.workspace);
  if (out.failed("softmax_backward_plan", e)) return out;
  out.planned = true;
  workspace_arg ws;
  if (c.workspace) {
    out.error = ws.prepare(c,
                           softmax_backward<T>(nullptr, &ws.need, dyp, dyg.stride, yp, yg.stride,
                                               dxp, dxg.stride, geo.rows, geo.cols, nullptr),
                           out.p);
    if (!out.error.empty()) return out;
  }
  e = launch_as(c.launch, [&](cudaStream_t stream) {
    if (c.workspace)
      return softmax_backward(ws.ptr, &ws.avail, dyp, dyg.stride, yp, yg.stride, dxp, dxg.stride,
                              geo.rows, geo.cols, stream);
    return softmax_backward(dyp, dyg.stride, yp, yg.stride, dxp, dxg.stride, geo.rows, geo.cols,
                            stream);
  });
  if (out.failed("launch", e)) {
    out.sticky = cudaDeviceSynchronize() != cudaSuccess;
    return out;
  }
  std::vector<T> dx_out, dy_after, y_after;
  device_buffer<T> const& out_buf = geo.in_place == 1 ? dy_buf : geo.in_place == 2 ? y_buf : dx_buf;
  e = out_buf.download(dx_out);
  if (e == cudaSuccess && geo.in_place != 1) e = dy_buf.download(dy_after);
  if (e == cudaSuccess && geo.in_place != 2) e = y_buf.download(y_after);
  if (out.failed("download", e)) return out;

  const std::vector<char> check = rows_to_check(geo.rows, geo.cols, g);
  auto ref_row = [&](i64 r, std::vector<double>& ref, std::vector<double>& scale) {
    const i64 dxbase = dxg.offset + r * dxg.stride;
    if (!check[static_cast<std::size_t>(r)]) {
      for (i64 j = 0; j < geo.cols; ++j) {
        ref[static_cast<std::size_t>(j)] =
            dtype<T>::to_double(dx_out[static_cast<std::size_t>(dxbase + j)]);
        scale[static_cast<std::size_t>(j)] = std::abs(ref[static_cast<std::size_t>(j)]);
      }
      return;
    }
    thread_local std::vector<double> dyr, yr;
    dyr.resize(static_cast<std::size_t>(geo.cols));
    yr.resize(static_cast<std::size_t>(geo.cols));
    for (i64 j = 0; j < geo.cols; ++j) {
      dyr[static_cast<std::size_t>(j)] =
          dtype<T>::to_double(dy[static_cast<std::size_t>(dyg.offset + r * dyg.stride + j)]);
      yr[static_cast<std::size_t>(j)] =
          dtype<T>::to_double(y[static_cast<std::size_t>(yg.offset + r * yg.stride + j)]);
    }
    reference_backward(dyr.data(), yr.data(), ref.data(), geo.cols);
    double dot = 0;
    for (std::size_t j = 0; j < yr.size(); ++j) dot += std::abs(dyr[j] * yr[j]);
    for (std::size_t j = 0; j < yr.size(); ++j)
      scale[j] = std::abs(yr[j]) * (std::abs(dyr[j]) + dot);
  };
  out.error = compare<T>(s, dx_out, dx_init, dxg.offset, dxg.stride, ref_row, false);
  if (out.error.empty() && geo.in_place != 1) out.error = unchanged(dy, dy_after, "dy");
  if (out.error.empty() && geo.in_place != 2) out.error = unchanged(y, y_after, "y");
  return out;
}

outcome run_call(call const& c) {
  if (c.o == op::log_fused) return run_forward<__nv_bfloat16, true>(c);
  switch (c.type) {
    case 0:
      return c.o == op::forward ? run_forward<float, false>(c) : run_backward<float>(c);
    case 1:
      return c.o == op::forward ? run_forward<__half, false>(c) : run_backward<__half>(c);
    default:
      return c.o == op::forward ? run_forward<__nv_bfloat16, false>(c)
                                : run_backward<__nv_bfloat16>(c);
  }
}

// ---------------------------------------------------------------------------------------------
// The watchdog: a call that runs past hang_seconds (a kernel that never ends) stops the run with
// the call and its repro line, since the device cannot be recovered from inside the process.

class watchdog {
 public:
  explicit watchdog(std::uint64_t seed) : seed_(seed), thread_([this] { watch(); }) {}
  ~watchdog() {
    stop_ = true;
    thread_.join();
  }
  void begin(call const& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = c.str();
    index_ = c.index;
    since_ = std::chrono::steady_clock::now();
    busy_ = true;
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(mutex_);
      if (busy_ && std::chrono::steady_clock::now() - since_ > std::chrono::seconds(hang_seconds)) {
        std::fflush(stdout);
        std::fprintf(stderr,
                     "FAILED: %s\n  still running after %d s (hung?)\n  repro: "
                     "rowsoftmax_gpu_fuzz --seed %llu --only %lld\n",
                     what_.c_str(), hang_seconds, static_cast<unsigned long long>(seed_),
                     static_cast<long long>(index_));
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }
  std::uint64_t seed_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string what_;
  i64 index_ = 0;
  std::chrono::steady_clock::time_point since_;
  bool busy_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------

void print_reachable(sweep_result const& s, device_limits const& limits, double seconds) {
  std::printf(
      "reachable configurations (sm_%d, %d SMs, clusters up to %d; sweep %.1f s, %zu + %zu "
      "threshold columns):\n",
      limits.compute_capability, limits.sm_count, limits.max_cluster_size, seconds,
      s.thresholds[0].size(), s.thresholds[1].size());
  for (int type = 0; type < num_types; ++type)
    for (int o = 0; o < num_ops; ++o) {
      int n = 0;
      int by_algo[num_algorithms] = {};
      for (auto const& [code, e] : s.reachable) {
        (void)code;
        if (e.key.type == type && static_cast<int>(e.key.o) == o) {
          ++n;
          ++by_algo[static_cast<int>(detail::kernel_configs[e.key.config].algo)];
        }
      }
      if (n == 0) continue;
      std::printf("%s %s: %d (", type_name(type), op_name(static_cast<op>(o)), n);
      for (int a = 0; a < num_algorithms; ++a)
        std::printf("%s%s %d", a ? ", " : "", to_string(static_cast<algorithm>(a)), by_algo[a]);
      std::printf(")\n");
      for (auto const& [code, e] : s.reachable) {
        (void)code;
        if (e.key.type == type && static_cast<int>(e.key.o) == o)
          std::printf("  %s: e.g. %s\n", e.key.str().c_str(), e.ex.str().c_str());
      }
    }
  std::printf("total: %zu\n", s.reachable.size());
}

/// --dry-run N: draws calls 0..N-1 without running them (no device needed) and reports when
/// their plans (plan_for, as the generator predicts them) reached every reachable configuration,
/// whether the calls drawn for a configuration are planned to reach it, and their sizes.
int dry_run_main(generator& gen, sweep_result const& reach, i64 n) {
  std::set<int> planned;
  i64 all_at = -1, targeted = 0, target_hit = 0, elements = 0, most = 0;
  i64 by_type_op[num_types][num_ops] = {};
  for (i64 k = 0; k < n; ++k) {
    const call c = gen.next(k);
    const int code = key_of(c.type, c.o, gen.predicted_plan(c)).code();
    planned.insert(code);
    ++by_type_op[c.type][static_cast<int>(c.o)];
    if (c.target_code >= 0) {
      ++targeted;
      target_hit += c.target_code == code ? 1 : 0;
    }
    const i64 e = c.geo.rows * c.geo.cols;
    elements += e;
    most = std::max(most, e);
    if (all_at < 0) {
      bool all = true;
      for (auto const& [rc, entry] : reach.reachable) {
        (void)entry;
        all = all && planned.count(rc) > 0;
      }
      if (all) all_at = k + 1;
    }
  }
  std::printf("dry run: %lld calls, every reachable configuration planned after %lld calls\n",
              static_cast<long long>(n), static_cast<long long>(all_at));
  std::printf("  calls drawn for a configuration: %lld, planned to reach it: %lld\n",
              static_cast<long long>(targeted), static_cast<long long>(target_hit));
  std::printf("  elements a call: mean %.0f, most %lld\n",
              n > 0 ? static_cast<double>(elements) / static_cast<double>(n) : 0.0,
              static_cast<long long>(most));
  for (int type = 0; type < num_types; ++type)
    for (int o = 0; o < num_ops; ++o)
      if (by_type_op[type][o] > 0)
        std::printf("  %s %s: %lld\n", type_name(type), op_name(static_cast<op>(o)),
                    static_cast<long long>(by_type_op[type][o]));
  std::size_t hit = 0;
  for (auto const& [rc, entry] : reach.reachable) {
    (void)entry;
    hit += planned.count(rc);
  }
  std::printf("  configurations planned: %zu / %zu\n", hit, reach.reachable.size());
  for (auto const& [rc, entry] : reach.reachable)
    if (!planned.count(rc)) std::printf("  not planned: %s\n", entry.key.str().c_str());
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: rowsoftmax_gpu_fuzz [--seconds N] [--seed S] [--only K] [--verbose] "
               "[--list-reachable] [--dry-run N]\n");
  return 2;
}

int fuzz_main(int argc, char** argv) {
  double seconds = 180;
  std::uint64_t seed =
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  i64 only = -1;
  i64 dry_run = -1;
  bool verbose = false, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seconds" && has_value) {
      seconds = std::strtod(argv[++i], nullptr);
    } else if (a == "--seed" && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--only" && has_value) {
      only = std::strtoll(argv[++i], nullptr, 0);
      if (only < 0) return usage();
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--list-reachable") {
      list = true;
    } else if (a == "--dry-run" && has_value) {
      dry_run = std::strtoll(argv[++i], nullptr, 0);
      if (dry_run < 0) return usage();
    } else {
      return usage();
    }
  }

  const bool gpu = have_gpu();
  device_limits limits;  // the H200's, where there is no device to query
  if (gpu) {
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = query_device_limits(device, &limits);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "device limits: %s\n", cudaGetErrorString(e));
      return 1;
    }
  } else if (!list && dry_run < 0) {
    std::printf("no CUDA device: GPU fuzz skipped\n");
    return 0;
  }
  if (!list) std::printf("rowsoftmax_gpu_fuzz: seed %llu\n", static_cast<unsigned long long>(seed));
  std::fflush(stdout);

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const sweep_result reach = sweep(limits);
  const double sweep_seconds = elapsed();
  if (list) {
    print_reachable(reach, limits, sweep_seconds);
    return 0;
  }
  std::printf("%zu reachable configurations (sweep %.1f s)\n", reach.reachable.size(),
              sweep_seconds);

  generator gen(seed, reach, limits);
  if (dry_run >= 0) return dry_run_main(gen, reach, dry_run);
  auto repro = [&](i64 k) {
    return "rowsoftmax_gpu_fuzz --seed " + std::to_string(seed) + " --only " + std::to_string(k);
  };

  if (only >= 0) {
    for (i64 k = 0; k < only; ++k) (void)gen.next(k);  // the generator's state before call K
    const call c = gen.next(only);
    std::printf("%s\n", c.str().c_str());
    std::fflush(stdout);
    watchdog dog(seed);
    dog.begin(c);
    const outcome r = run_call(c);
    dog.end();
    if (r.planned) std::printf("plan: %s\n", to_string(r.p).c_str());
    if (!r.error.empty()) {
      std::printf("FAILED: %s\n", r.error.c_str());
      return 1;
    }
    std::printf("passed\n");
    return 0;
  }

  std::set<int> reached;
  std::map<int, cover_key> outside;  // reached, not in the sweep's set
  i64 by_type_op[num_types][num_ops] = {};
  i64 by_algo[num_algorithms] = {};
  i64 calls = 0, targeted = 0, failures = 0, differs = 0;
  double next_progress = 15;
  watchdog dog(seed);
  for (i64 k = 0; elapsed() < seconds; ++k) {
    const call c = gen.next(k);
    const auto start = std::chrono::steady_clock::now();
    dog.begin(c);
    const outcome r = run_call(c);
    dog.end();
    ++calls;
    targeted += c.target.empty() ? 0 : 1;
    ++by_type_op[c.type][static_cast<int>(c.o)];
    if (r.planned) {
      ++by_algo[static_cast<int>(r.p.algo)];
      const cover_key key = key_of(c.type, c.o, r.p);
      reached.insert(key.code());
      if (!reach.reachable.count(key.code())) outside.emplace(key.code(), key);
      const plan predicted = gen.predicted_plan(c);
      if (predicted != r.p) {
        ++differs;
        if (verbose)
          std::printf("  call %lld: the launcher plans %s, plan_for %s\n",
                      static_cast<long long>(k), to_string(r.p).c_str(),
                      to_string(predicted).c_str());
      }
    }
    if (verbose)
      std::printf("%s\n  plan: %s, %.3f s: %s\n", c.str().c_str(),
                  r.planned ? to_string(r.p).c_str() : "none",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  r.error.empty() ? "ok" : "FAILED");
    if (!r.error.empty()) {
      ++failures;
      std::printf("FAILED: %s\n  plan: %s\n  %s\n  repro: %s\n", c.str().c_str(),
                  r.planned ? to_string(r.p).c_str() : "none", r.error.c_str(), repro(k).c_str());
      if (r.sticky) std::printf("  the CUDA context is unusable after this error: stopping\n");
      if (failures >= max_failures || r.sticky) break;
    }
    if (elapsed() >= next_progress) {
      std::size_t hit = 0;
      for (int code : reached) hit += reach.reachable.count(code);
      std::printf("[%.0f s] %lld calls, %zu / %zu configurations reached, %lld failed\n", elapsed(),
                  static_cast<long long>(calls), hit, reach.reachable.size(),
                  static_cast<long long>(failures));
      next_progress += 15;
    }
    std::fflush(stdout);
  }

  std::vector<reachable_entry> missing;
  for (auto const& [code, e] : reach.reachable)
    if (!reached.count(code)) missing.push_back(e);
  std::printf("calls: %lld (%lld drawn for a configuration), %.1f s, seed %llu\n",
              static_cast<long long>(calls), static_cast<long long>(targeted), elapsed(),
              static_cast<unsigned long long>(seed));
  for (int type = 0; type < num_types; ++type)
    for (int o = 0; o < num_ops; ++o)
      if (by_type_op[type][o] > 0)
        std::printf("  %s %s: %lld\n", type_name(type), op_name(static_cast<op>(o)),
                    static_cast<long long>(by_type_op[type][o]));
  std::printf("  by algorithm:");
  for (int a = 0; a < num_algorithms; ++a)
    std::printf(" %s %lld", to_string(static_cast<algorithm>(a)),
                static_cast<long long>(by_algo[a]));
  std::printf("\n  plans other than plan_for's (the launcher fell back on this device): %lld\n",
              static_cast<long long>(differs));
  std::printf("configurations reached: %zu / %zu reachable\n",
              reach.reachable.size() - missing.size(), reach.reachable.size());
  for (auto const& e : missing)
    std::printf("  missing: %s (e.g. %s)\n", e.key.str().c_str(), e.ex.str().c_str());
  for (auto const& [code, k] : outside) {
    (void)code;
    std::printf("  reached, not in the sweep: %s\n", k.str().c_str());
  }
  std::printf("failed calls: %lld\n", static_cast<long long>(failures));
  // A failed call outranks coverage; coverage short of the reachable set alone says the budget
  // was too short for it, not that a result was wrong.
  const int status = failures > 0 ? 1 : !missing.empty() ? 3 : 0;
  const char* verdict = status == 1   ? "FAILED"
                        : status == 3 ? "INCOMPLETE (no call failed; a longer --seconds reaches "
                                        "the missing configurations)"
                                      : "PASSED";
  std::printf("%s (seed %llu)\n", verdict, static_cast<unsigned long long>(seed));
  return status;
}

}  // namespace
}  // namespace rowsoftmax::test

int main(int argc, char** argv) {
  return rowsoftmax::test::fuzz_main(argc, argv);
}
