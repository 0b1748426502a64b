// SPDX-License-Identifier: Apache-2.0
// Benchmark plumbing shared by the per-type translation units: buffers, the copy ceiling,
// CUDA-event timing with medians, and the summary table.
#pragma once

// The plain ops' kernels come from the one instantiating unit (see benchmarks/CMakeLists.txt),
// forced plans included: the per-type units compile only their fused kernels.
#include <rowsoftmax/extern_fused.cuh>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rowsoftmax::bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// rows * cols for the bandwidth sweep.
inline constexpr std::int64_t sweep_elems = std::int64_t{1} << 27;

void fill_random(float* p, std::size_t n, std::uint32_t seed);
void fill_random(__half* p, std::size_t n, std::uint32_t seed);
void fill_random(__nv_bfloat16* p, std::size_t n, std::uint32_t seed);

/// Three device buffers of sweep_elems fp32 elements each, holding uniform random values of
/// the type last asked for (never zeros: zeros can run faster than real data).
struct pool {
  void* buf[3] = {nullptr, nullptr, nullptr};
  std::size_t filled_as = 0;  // sizeof the type the buffers hold (0: none yet)
  static constexpr std::size_t bytes = sweep_elems * sizeof(float);
  static pool& get();

  template <class T>
  T* as(int i) {
    if (filled_as != sizeof(T) * 16 + (std::is_same_v<T, __half> ? 1 : 0)) {
      for (int k = 0; k < 3; ++k)
        fill_random(static_cast<T*>(buf[k]), bytes / sizeof(T), 1234u + k);
      check(cudaDeviceSynchronize(), "pool fill");
      filled_as = sizeof(T) * 16 + (std::is_same_v<T, __half> ? 1 : 0);
    }
    return static_cast<T*>(buf[i]);
  }
};

/// Device-to-device copy bandwidth (bytes read + written per second, TB/s) of `pool::bytes`,
/// measured once per process before the softmax benchmarks, timed as each softmax is.
struct copy_ceiling {
  double synchronized;  ///< the median of 30 copies each waited for (as time_launches times)
  double back_to_back;  ///< copies issued back to back (as time_back_to_back times)
};
copy_ceiling const& copy_bandwidth();

struct result {
  std::string direction, dtype, plan;  // plan: with " [forced]" for a configuration forced
                                       // instead of the planned one, " [queued]" for queued timings
  std::int64_t rows = 0, cols = 0;
  double us = 0, tbps = 0;
  double b2b_us = 0, b2b_tbps = 0;  // back to back (0: not timed so; see time_back_to_back)
};
std::map<std::string, result>& results();

/// Keeps the GPU busy for about `ns` nanoseconds (one thread spinning on the global timer), so
/// that what is enqueued behind it waits for the GPU, not for the host.
void hold_gpu(long long ns);

/// Milliseconds from an event recorded before `calls` calls of `launch` to one recorded after
/// them, waited for.
template <class F>
float events_ms(cudaEvent_t start, cudaEvent_t stop, F&& launch, int calls = 1) {
  check(cudaEventRecord(start), "record");
  for (int i = 0; i < calls; ++i) check(launch(), "launch");
  check(cudaEventRecord(stop), "record");
  check(cudaEventSynchronize(stop), "sync");
  float t = 0;
  check(cudaEventElapsedTime(&t, start, stop), "elapsed");
  return t;
}

/// How time_launches times a call. `idle`: the events and the call enqueued on an idle GPU, the
/// host's submission timed too. The others enqueue each launch behind a 20 us spin, so that the
/// events time what the GPU spends on the call (from the start event to the stop event, both
/// already queued): `queued` with the input in L2 from the call before, as when a call repeats;
/// `cold` with L2 flushed before each call (flush_l2); `hot` with the input rewritten just before
/// each call by a copy (`rewrite`), as after the kernel that produced it.
enum class timing { idle, queued, cold, hot };

/// A timing's name in benchmark names ("queued", "cold", "hot"; idle: "").
inline std::string timing_name(timing t) {
  return t == timing::queued ? "queued"
         : t == timing::cold ? "cold"
         : t == timing::hot  ? "hot"
                             : "";
}

/// The tag the summary gives a timing: " [queued]", " [cold]", " [hot]"; idle: "".
inline std::string timing_tag(timing t) {
  return t == timing::idle ? std::string() : " [" + timing_name(t) + "]";
}

/// Evicts what L2 holds: writes a buffer of twice the device's L2 size (allocated once).
void flush_l2();

/// Median of per-launch times (CUDA events) in microseconds; runs `launch` once per iteration,
/// timed as `how` says; `rewrite` (hot only) rewrites the call's input.
template <class F>
double time_launches(benchmark::State& state, F&& launch, timing how = timing::idle,
                     std::function<cudaError_t()> const& rewrite = {}) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (int i = 0; i < 3; ++i) check(launch(), "warm-up launch");
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> ms;
  for (auto _ : state) {
    if (how != timing::idle) hold_gpu(20000);
    if (how == timing::cold) flush_l2();
    if (how == timing::hot) check(rewrite(), "rewrite");
    const float t = events_ms(start, stop, launch);
    state.SetIterationTime(t * 1e-3);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : 1e3 * ms[ms.size() / 2];
}

/// Per-call time in microseconds of `launch` issued back to back, as a training step issues its
/// kernels: batches of calls with no synchronization between them, timed from an event before a
/// batch to one after it, the median over 9 batches of the batch time over its calls
/// (`per_call_us`, time_launches's median, sizes a batch to about 2 ms). The host's submission of
/// one call overlaps the GPU's work on the one before, where time_launches's events, recorded on an
/// idle GPU, also time the submission of the call between them (docs/tuning.md,
/// How to measure).
template <class F>
double time_back_to_back(F&& launch, double per_call_us) {
  const int calls = std::clamp(static_cast<int>(2000.0 / std::max(per_call_us, 1.0)), 5, 200);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  std::vector<float> ms;
  for (int b = 0; b < 10; ++b) {
    const float t = events_ms(start, stop, launch, calls);
    if (b > 0) ms.push_back(t / calls);  // the first batch warms up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[ms.size() / 2];
}

template <class T>
const char* dtype_name();
template <>
inline const char* dtype_name<float>() {
  return "fp32";
}
template <>
inline const char* dtype_name<__half>() {
  return "fp16";
}
template <>
inline const char* dtype_name<__nv_bfloat16>() {
  return "bf16";
}

/// A kernel configuration (and cluster size) to use instead of the launcher's choice; or (config
/// -1) the launcher's plan, where it is split or streaming, with some of its fields overridden
/// (each -1 where not; groups, ctas and hinted split plans only).
struct forced_config {
  int config = -1;  ///< -1: none
  int cluster = 1;
  int stash = -1;   ///< streaming, split: tiles a CTA stashes; -1: what the planner's would
  int groups = -1;  ///< split: rows in flight
  int ctas = -1;    ///< split: CTAs a row
  int halves = -1;  ///< split backward: tiles of which a CTA keeps dy alone (plan::stash_halves)
  int hinted = -1;  ///< split: 1 the hinted split configuration, 0 the split one
  int split = -1;   ///< 1: a staged split plan replaced by the split tier's plan of the row
  bool overrides_plan() const {
    return config < 0 &&
           (stash >= 0 || groups >= 0 || ctas >= 0 || halves >= 0 || hinted >= 0 || split >= 0);
  }
};

/// Reports one benchmark's timing: `bytes` moved in `us` (one launch, synchronized) and `b2b_us`
/// (back to back, 0: not timed so) as Google Benchmark counters and as the summary's result
/// `r`, labelled with the plan `pl` and the summary's `note` on it.
template <class T>
void report(benchmark::State& state, result& r, direction dir, plan const& pl,
            std::string const& note, std::int64_t rows, std::int64_t cols, double bytes, double us,
            double b2b_us) {
  const double tbps = us > 0 ? bytes / (us * 1e-6) / 1e12 : 0;
  const double b2b_tbps = b2b_us > 0 ? bytes / (b2b_us * 1e-6) / 1e12 : 0;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.SetLabel(to_string(pl));
  state.counters["median_us"] = us;
  state.counters["TBps"] = tbps;
  state.counters["pct_copy"] = 100.0 * tbps / copy_bandwidth().synchronized;
  if (b2b_us > 0) {
    state.counters["b2b_us"] = b2b_us;
    state.counters["b2b_pct_copy"] = 100.0 * b2b_tbps / copy_bandwidth().back_to_back;
  }
  r = {dir == direction::forward ? "forward" : "backward",
       dtype_name<T>(),
       to_string(pl) + note,
       rows,
       cols,
       us,
       tbps,
       b2b_us,
       b2b_tbps};
}

/// One benchmark: forward (2 tensors moved) or backward (3) of rows x cols; `workspace`: the
/// launchers with a workspace (allocated once, outside the timing); `how`: see time_launches (hot:
/// forward only, the input rewritten from the third buffer). Timed both per launch
/// (time_launches) and, where idle, back to back (time_back_to_back).
template <class T>
void softmax_benchmark(benchmark::State& state, std::string const& name, direction dir,
                       std::int64_t rows, std::int64_t cols, forced_config forced = {},
                       bool workspace = false, timing how = timing::idle) {
  pool& p = pool::get();
  T* a = p.as<T>(0);
  T* b = p.as<T>(1);
  T* c = p.as<T>(2);
  plan pl;
  if (dir == direction::forward) {
    check(softmax_forward_plan<T>(a, cols, b, cols, rows, cols, &pl, workspace), "plan");
  } else {
    check(softmax_backward_plan<T>(a, cols, b, cols, c, cols, rows, cols, &pl, workspace), "plan");
  }
  // The current device's limits, for the plans the overrides below rebuild.
  const auto current_limits = [] {
    int device = 0;
    check(cudaGetDevice(&device), "device");
    device_limits limits;
    check(query_device_limits(device, &limits), "device limits");
    return limits;
  };
  if (forced.overrides_plan()) {
    // A staged split plan, or a row no split plan was made for (one a register or staged tier
    // holds, or one whose split keeps its workspace in the output), split as the split tier would
    // with a workspace.
    if (forced.split > 0 && (pl.algo != algorithm::split || pl.workspace_in_output)) {
      pl = detail::make_split_plan(dir, {pl.vec, pl.shifted, true, true}, rows, pl.windows,
                                   sizeof(T), current_limits());
    }
    const bool split = pl.algo == algorithm::split && !pl.workspace_in_output;
    if (!(split || (pl.algo == algorithm::streaming && forced.groups < 0 && forced.ctas < 0 &&
                    forced.hinted < 0))) {
      state.SkipWithError("overrides for a plan they do not apply to");
      return;
    }
    if (forced.groups >= 0 || forced.ctas >= 0) {
      pl = detail::with_groups(pl, forced.groups >= 0 ? forced.groups : pl.row_groups,
                               forced.ctas >= 0 ? forced.ctas : pl.split_ctas);
      // Stashed tiles as the split tier gives shares of that many CTAs.
      detail::kernel_config const& k = detail::kernel_configs[pl.config];
      const int tensors = detail::tensors_of(dir);
      pl.stash_tiles = detail::stashed_tiles(
          detail::ceil_div(detail::row_tiles(pl), std::int64_t{pl.split_ctas}),
          detail::keeps_last_tile(k, tensors, sizeof(T)) ? 1 : 0,
          detail::stash_capacity(k, tensors, sizeof(T), current_limits()));
    }
    if (forced.stash >= 0) pl.stash_tiles = forced.stash;
    if (forced.halves >= 0) pl.stash_halves = forced.halves;
    if (forced.hinted >= 0)
      pl.config = forced.hinted > 0 ? detail::configs::split_hinted : detail::configs::split;
  }
  // A workspace the call takes (none where the plan keeps it in the output).
  std::size_t ws_bytes = pl.workspace_in_output ? 0 : static_cast<std::size_t>(pl.workspace_bytes);
  void* ws = nullptr;
  if (ws_bytes > 0) check(cudaMalloc(&ws, ws_bytes), "workspace");
  if (forced.config >= 0) {
    pl = detail::make_plan(forced.config, {pl.vec, pl.shifted}, rows, pl.windows, sizeof(T),
                           forced.cluster);
    // Streaming CTAs stash what the planner's of that size would, or `forced.stash`.
    if (detail::kernel_configs[forced.config].algo == algorithm::streaming && forced.stash >= 0) {
      pl.stash_tiles = forced.stash;
    } else if (detail::kernel_configs[forced.config].algo == algorithm::streaming) {
      pl.stash_tiles = detail::streaming_stash_tiles(dir, pl, sizeof(T), current_limits());
    }
  }
  const detail::tensor_arg fwd_t[] = {{a, cols, false}, {b, cols, true}};
  const detail::tensor_arg bwd_t[] = {{a, cols, false}, {b, cols, false}, {c, cols, true}};
  const auto launch = [&] {
    if (forced.config >= 0 || forced.overrides_plan())
      return dir == direction::forward
                 ? detail::run<detail::forward_op<T>>(pl, fwd_t, {a, cols, b, cols, rows, cols},
                                                      nullptr, ws, ws_bytes)
                 : detail::run<detail::backward_op<T>>(
                       pl, bwd_t, {a, cols, b, cols, c, cols, rows, cols}, nullptr, ws, ws_bytes);
    if (workspace)
      return dir == direction::forward
                 ? softmax_forward<T>(ws ? ws : &ws_bytes, &ws_bytes, a, b, rows, cols)
                 : softmax_backward<T>(ws ? ws : &ws_bytes, &ws_bytes, a, b, c, rows, cols);
    return dir == direction::forward ? softmax_forward<T>(a, b, rows, cols)
                                     : softmax_backward<T>(a, b, c, rows, cols);
  };
  // A forced plan the dispatcher refuses (a probe's override that does not fit the call or the
  // device) skips this benchmark rather than ending the run.
  if (forced.config >= 0 || forced.overrides_plan()) {
    const cudaError_t e = launch();
    if (e != cudaSuccess) {
      state.SkipWithError(cudaGetErrorString(e));
      if (ws) check(cudaFree(ws), "workspace");
      return;
    }
  }
  if (how == timing::hot && dir != direction::forward) {
    state.SkipWithError("hot timing is forward only");
    if (ws) check(cudaFree(ws), "workspace");
    return;
  }
  const auto rewrite = [&] {
    return cudaMemcpyAsync(a, c, static_cast<std::size_t>(rows * cols) * sizeof(T),
                           cudaMemcpyDeviceToDevice);
  };
  const double us = time_launches(state, launch, how, rewrite);
  // Back to back once a benchmark: Google Benchmark runs this function more than once to size
  // its iterations (the first run's median sizes the batches).
  result& r = results()[name];
  const double b2b_us = how != timing::idle || us <= 0 ? 0.0
                        : r.b2b_us > 0                 ? r.b2b_us
                                                       : time_back_to_back(launch, us);
  if (ws) check(cudaFree(ws), "workspace");
  const double bytes =
      static_cast<double>(dir == direction::forward ? 2 : 3) * rows * cols * sizeof(T);
  report<T>(state, r, dir, pl,
            std::string(forced.config >= 0 || forced.overrides_plan() ? " [forced]" : "") +
                timing_tag(how),
            rows, cols, bytes, us, b2b_us);
}

/// A fused call's variant in the benchmark: log-softmax (options at their defaults), softmax
/// with a scale, a per-row scale and the row log-sum-exp written (`scaled`), or softmax with the
/// options at their defaults (`plain`: the rows of another output type).
enum class fused_variant { log, scaled, plain };

/// One fused benchmark, planned: forward (x of T into y of Out) or backward (dy and y of Out
/// into dx of T) of rows x cols through the fused launchers (`workspace`: their workspace
/// overloads), timed as softmax_benchmark; the bytes count each tensor's own element size, the
/// per-row scales read and the log-sum-exp written. Tagged with the variant, or "[to_<Out>]"
/// where Out is not T.
template <class T, class Out = T>
void fused_benchmark(benchmark::State& state, std::string const& name, direction dir,
                     fused_variant variant, std::int64_t rows, std::int64_t cols,
                     bool workspace = false) {
  pool& p = pool::get();
  T* a = p.as<T>(0);
  if constexpr (!std::is_same_v<T, Out>) {
    // Buffers 1 and 2 hold Out's values (the pool refills them all for the next benchmark).
    const std::size_t n = pool::bytes / sizeof(Out);
    for (int k = 1; k < 3; ++k) fill_random(static_cast<Out*>(p.buf[k]), n, 4321u + k);
    check(cudaDeviceSynchronize(), "fill");
    p.filled_as = 0;
  }
  Out* b = static_cast<Out*>(p.buf[1]);
  Out* c = static_cast<Out*>(p.buf[2]);
  const bool log = variant == fused_variant::log;
  float* row_floats = nullptr;  // per-row scales, then the log-sum-exp
  check(cudaMalloc(&row_floats, 2 * static_cast<std::size_t>(rows) * sizeof(float)), "rows");
  const std::vector<float> scales(static_cast<std::size_t>(rows), 0.75f);
  check(
      cudaMemcpy(row_floats, scales.data(), scales.size() * sizeof(float), cudaMemcpyHostToDevice),
      "row scales");
  softmax_options o;
  if (variant == fused_variant::scaled) {
    o.scale = 1.25f;
    o.row_scale = row_floats;
    if (dir == direction::forward) o.row_lse = row_floats + rows;
  }
  plan pl;
  if (dir == direction::forward) {
    check(fused_forward_plan(a, cols, b, cols, rows, cols, o, log, &pl, workspace), "plan");
  } else {
    check(fused_backward_plan(c, cols, b, cols, a, cols, rows, cols, o, log, &pl, workspace),
          "plan");
  }
  std::size_t ws_bytes = pl.workspace_in_output ? 0 : static_cast<std::size_t>(pl.workspace_bytes);
  void* ws = nullptr;
  if (ws_bytes > 0) check(cudaMalloc(&ws, ws_bytes), "workspace");
  void* const wsp = ws ? ws : &ws_bytes;  // a size of 0 runs with any non-null pointer
  std::size_t* const wsb = workspace ? &ws_bytes : nullptr;
  const auto launch = [&]() -> cudaError_t {
    if (dir == direction::forward) {
      if (log)
        return wsb ? log_softmax_forward(wsp, wsb, a, cols, b, cols, rows, cols, o)
                   : log_softmax_forward(a, cols, b, cols, rows, cols, o);
      return wsb ? softmax_forward(wsp, wsb, a, cols, b, cols, rows, cols, o)
                 : softmax_forward(a, cols, b, cols, rows, cols, o);
    }
    if (log)
      return wsb ? log_softmax_backward(wsp, wsb, c, cols, b, cols, a, cols, rows, cols, o)
                 : log_softmax_backward(c, cols, b, cols, a, cols, rows, cols, o);
    return wsb ? softmax_backward(wsp, wsb, c, cols, b, cols, a, cols, rows, cols, o)
               : softmax_backward(c, cols, b, cols, a, cols, rows, cols, o);
  };
  const double us = time_launches(state, launch);
  result& r = results()[name];
  const double b2b_us = us <= 0 ? 0.0 : r.b2b_us > 0 ? r.b2b_us : time_back_to_back(launch, us);
  if (ws) check(cudaFree(ws), "workspace");
  check(cudaFree(row_floats), "rows");
  const double row_bytes =
      variant == fused_variant::scaled ? (dir == direction::forward ? 8.0 : 4.0) * rows : 0.0;
  const double elems = static_cast<double>(rows) * static_cast<double>(cols);
  const double bytes =
      (dir == direction::forward ? elems * static_cast<double>(sizeof(T) + sizeof(Out))
                                 : elems * static_cast<double>(2 * sizeof(Out) + sizeof(T))) +
      row_bytes;
  const std::string tag = !std::is_same_v<T, Out> ? std::string(" [to_") + dtype_name<Out>() + "]"
                          : log                   ? " [log]"
                                                  : " [scaled]";
  report<T>(state, r, dir, pl, tag, rows, cols, bytes, us, b2b_us);
}

/// The benchmarks of another output type, from T to Out: "fused/to_<Out>/<dir>/<T>/cols:N",
/// rows * cols = 2^27 (long rows: 8, with a workspace), at the fused variants' shapes.
template <class T, class Out>
void register_out_type() {
  for (direction dir : {direction::forward, direction::backward})
    for (std::int64_t cols : {std::int64_t{1000}, std::int64_t{4096}, std::int64_t{32000},
                              std::int64_t{131072}, std::int64_t{1} << 20}) {
      const bool long_row = cols == std::int64_t{1} << 20;
      const std::int64_t rows = std::max<std::int64_t>(long_row ? 8 : 1, sweep_elems / cols);
      const std::string name = std::string("fused/to_") + dtype_name<Out>() + "/" +
                               (dir == direction::forward ? "forward/" : "backward/") +
                               dtype_name<T>() + (long_row ? "/long/workspace" : "") +
                               "/cols:" + std::to_string(cols);
      register_timed(name, [=](benchmark::State& s) {
        fused_benchmark<T, Out>(s, name, dir, fused_variant::plain, rows, cols, long_row);
      });
    }
}

/// Plans, times and reports one masked softmax call (options `o`, planned), forward or backward
/// of rows x cols, `bytes` the bytes it moves, `tag` its variant in the report.
template <class T, class Options>
void time_masked(benchmark::State& state, std::string const& name, direction dir, Options const& o,
                 std::int64_t rows, std::int64_t cols, double bytes, const char* tag) {
  pool& p = pool::get();
  T* a = p.as<T>(0);
  T* b = p.as<T>(1);
  T* c = p.as<T>(2);
  plan pl;
  if (dir == direction::forward) {
    check(fused_forward_plan<T>(a, cols, b, cols, rows, cols, o, false, &pl), "plan");
  } else {
    check(fused_backward_plan<T>(a, cols, b, cols, c, cols, rows, cols, o, false, &pl), "plan");
  }
  const auto launch = [&]() -> cudaError_t {
    if (dir == direction::forward) return softmax_forward<T>(a, cols, b, cols, rows, cols, o);
    return softmax_backward<T>(a, cols, b, cols, c, cols, rows, cols, o);
  };
  const double us = time_launches(state, launch);
  result& r = results()[name];
  const double b2b_us = us <= 0 ? 0.0 : r.b2b_us > 0 ? r.b2b_us : time_back_to_back(launch, us);
  report<T>(state, r, dir, pl, tag, rows, cols, bytes, us, b2b_us);
}

/// A masked benchmark's masks: `causal`, square score matrices (queries = cols, top-left:
/// query q keeps q + 1 columns, half the row on average); `lengths`, a length a row, spread
/// over [1, cols] (half on average).
enum class mask_variant { causal, lengths };

/// One masked softmax benchmark (masked_softmax_options, scale 1/8), planned, forward or
/// backward; the bytes count what moves: the kept columns read (backward: of dy and y), every
/// column written, the lengths read.
template <class T>
void masked_benchmark(benchmark::State& state, std::string const& name, direction dir,
                      mask_variant variant, std::int64_t rows, std::int64_t cols) {
  masked_softmax_options o;
  o.scale = 0.125f;
  std::vector<int> lengths;
  double kept = 0;
  if (variant == mask_variant::causal) {
    o.queries = cols;
    o.causal = true;
    kept = static_cast<double>(rows) * static_cast<double>(cols + 1) / 2;
  } else {
    lengths.resize(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      lengths[static_cast<std::size_t>(r)] = static_cast<int>(1 + (r * 7919) % cols);
      kept += static_cast<double>(lengths[static_cast<std::size_t>(r)]);
    }
  }
  int* len = nullptr;
  if (!lengths.empty()) {
    check(cudaMalloc(&len, lengths.size() * sizeof(int)), "lengths");
    check(cudaMemcpy(len, lengths.data(), lengths.size() * sizeof(int), cudaMemcpyHostToDevice),
          "lengths");
    o.lengths = len;
  }
  const double bytes = (static_cast<double>(dir == direction::forward ? 1 : 2) * kept +
                        static_cast<double>(rows) * static_cast<double>(cols)) *
                           sizeof(T) +
                       4.0 * static_cast<double>(lengths.size());
  time_masked<T>(state, name, dir, o, rows, cols, bytes,
                 variant == mask_variant::causal ? " [causal]" : " [lengths]");
  if (len) check(cudaFree(len), "lengths");
}

/// One boolean-masked softmax benchmark (bool_masked_softmax_options, scale 1/8), planned,
/// forward or backward. Up to 4096 columns, attention scores: rows of 8 heads of `cols` queries
/// each, one mask of (batch, queries, cols) broadcast over the heads; longer rows, vocabulary
/// rows: one mask row shared by every row (allowed tokens). A tenth of the mask's bytes 0. The
/// bytes count what moves: every element read (backward: of dy and y) and written, the mask
/// once.
template <class T>
void bool_mask_benchmark(benchmark::State& state, std::string const& name, direction dir,
                         std::int64_t rows, std::int64_t cols) {
  bool_masked_softmax_options o;
  o.scale = 0.125f;
  const bool scores = cols <= 4096;
  if (scores) {
    o.heads = 8;
    o.queries = cols;
  }
  const std::int64_t batches = scores ? rows / (o.heads * o.queries) : 1;
  std::vector<unsigned char> mask(static_cast<std::size_t>(batches * (scores ? cols : 1) * cols));
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 2654435761u) % 10 == 0 ? 0 : 1;
  unsigned char* keep = nullptr;
  check(cudaMalloc(&keep, mask.size()), "mask");
  check(cudaMemcpy(keep, mask.data(), mask.size(), cudaMemcpyHostToDevice), "mask");
  o.keep = reinterpret_cast<bool const*>(keep);
  o.keep_strides = scores ? broadcast_strides{cols * cols, 0, cols} : broadcast_strides{0, 0, 0};
  const double bytes = static_cast<double>(dir == direction::forward ? 2 : 3) *
                           static_cast<double>(rows) * static_cast<double>(cols) * sizeof(T) +
                       static_cast<double>(mask.size());
  time_masked<T>(state, name, dir, o, rows, cols, bytes, " [boolmask]");
  check(cudaFree(keep), "mask");
}

/// One biased softmax benchmark (biased_softmax_options, scale 1/8, no mask), planned, forward
/// (backward does not read the bias: the boolean-masked rows time it). Up to 4096 columns,
/// attention scores with a bias of the input type a row (relative positions, a float mask: as
/// many bytes as x); longer rows, vocabulary rows: one float bias row shared by every row (a
/// logit bias). The bytes count what moves: x read, y written, the bias once.
template <class T>
void bias_benchmark(benchmark::State& state, std::string const& name, std::int64_t rows,
                    std::int64_t cols) {
  biased_softmax_options o;
  o.scale = 0.125f;
  const bool scores = cols <= 4096;
  const std::size_t elem = scores ? sizeof(T) : sizeof(float);
  const std::size_t count = static_cast<std::size_t>(scores ? rows * cols : cols);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = static_cast<float>((i * 2654435761u) % 64) / 16.0f - 2.0f;
  void* bias = nullptr;
  check(cudaMalloc(&bias, count * elem), "bias");
  if (scores) {
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = detail::from_float<T>(values[i]);
    check(cudaMemcpy(bias, v.data(), count * elem, cudaMemcpyHostToDevice), "bias");
    o.bias_dtype = bias_type::input;
    o.bias_strides = {cols, 0, 0};
  } else {
    check(cudaMemcpy(bias, values.data(), count * elem, cudaMemcpyHostToDevice), "bias");
    o.bias_dtype = bias_type::f32;
    o.bias_strides = {0, 0, 0};
  }
  o.bias = bias;
  const double bytes = 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * sizeof(T) +
                       static_cast<double>(count * elem);
  time_masked<T>(state, name, direction::forward, o, rows, cols, bytes, " [bias]");
  check(cudaFree(bias), "bias");
}

/// Registers the sweeps for one element type (defined in bench_<type>.cu).
void register_float();
void register_half();
void register_bf16();
void register_ceilings();

/// Registers one benchmark as every softmax benchmark here is run: its time set by the CUDA
/// events (manual time), at least 0.1 s, in microseconds. Google Benchmark appends
/// "/min_time:0.100/manual_time" to `name`.
template <class F>
void register_timed(std::string const& name, F&& body) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(body))
      ->UseManualTime()
      ->MinTime(0.1)
      ->Unit(benchmark::kMicrosecond);
}

/// Tuning probes, from the environment: ROWSOFTMAX_BENCH_PROBE holds entries
/// "dir:dtype:rows:cols:config[:cluster[:stash]][:key=value...]" (dir fwd or bwd; config -1: the
/// planned call, -2: the planned call given a workspace; not the split configurations, which
/// need one; stash: the tiles a streaming CTA keeps in shared memory, by default what the planner
/// gives that many CTAs; the keys, for a config of -1 or -2 whose plan is split (with a
/// workspace) or streaming: stash and halves, which override the plan's stashed tiles and half
/// tiles, and for split plans groups, ctas and hinted, its row groups, CTAs a row and (1 or 0)
/// hinted configuration, and split=1, a row the split tier would not take split as it would with
/// a workspace), and for any entry timing (0 idle, 1 queued, 2 cold, 3 hot: see time_launches),
/// separated by spaces, commas or newlines, each registered as
/// "probe/<direction>/<dtype>/rows:R/cols:C/config:CxN[/stash:S][/key:value...]" and run through
/// that configuration, so that configurations the planner does not pick can be timed without a
/// rebuild. Malformed entries are reported and skipped.
template <class T>
void register_probes() {
  char const* env = std::getenv("ROWSOFTMAX_BENCH_PROBE");
  if (env == nullptr) return;
  std::string list = env;
  for (char& ch : list)
    if (ch == ',' || ch == '\n' || ch == '\t') ch = ' ';
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t end = std::min(list.find(' ', at), list.size());
    const std::string entry = list.substr(at, end - at);
    at = end + 1;
    if (entry.empty()) continue;
    std::vector<std::string> fields;
    for (std::size_t from = 0;;) {
      const std::size_t colon = entry.find(':', from);
      fields.push_back(entry.substr(from, colon == std::string::npos ? colon : colon - from));
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    auto number = [](std::string const& f, long long* out) {
      char* rest = nullptr;
      *out = std::strtoll(f.c_str(), &rest, 10);
      return !f.empty() && rest != nullptr && *rest == '\0';
    };
    bool ok = fields.size() >= 5;
    long long rows = 0, cols = 0, config = -1, cluster = 1, stash = -1;
    ok = ok && number(fields[2], &rows) && number(fields[3], &cols) && number(fields[4], &config);
    forced_config forced;
    int how = 0;  // timing
    std::string suffix;
    int positional = 0;
    for (std::size_t i = 5; ok && i < fields.size(); ++i) {
      const std::size_t eq = fields[i].find('=');
      long long v = 0;
      if (eq == std::string::npos) {  // cluster, then stash
        ok = positional < 2 && number(fields[i], &v);
        (positional++ == 0 ? cluster : stash) = v;
        continue;
      }
      const std::string key = fields[i].substr(0, eq);
      ok = number(fields[i].substr(eq + 1), &v) && v >= 0 && v <= 1 << 20;
      if (ok && key == "timing") {
        ok = v <= 3;
        how = static_cast<int>(v);
        suffix += "/timing:" + std::to_string(v);
        continue;
      }
      ok = ok && config < 0;
      int* slot = key == "groups"   ? &forced.groups
                  : key == "ctas"   ? &forced.ctas
                  : key == "stash"  ? &forced.stash
                  : key == "halves" ? &forced.halves
                  : key == "hinted" ? &forced.hinted
                  : key == "split"  ? &forced.split
                                    : nullptr;
      ok = ok && slot != nullptr && *slot < 0;
      if (ok) *slot = static_cast<int>(v);
      suffix += "/" + key + ":" + std::to_string(v);
    }
    const std::string dir = fields.empty() ? "" : fields[0];
    const std::string dtype = fields.size() < 2 ? "" : fields[1];
    const bool fwd = dir == "fwd", bwd = dir == "bwd";
    if (!ok || !(fwd || bwd) || rows < 1 || cols < 1 || config < -2 ||
        config >= detail::num_kernel_configs || cluster < 1 || stash < -1 ||
        (stash >= 0 &&
         (config < 0 || detail::kernel_configs[config].algo != algorithm::streaming)) ||
        (config >= 0 && detail::splits(detail::kernel_configs[config])) ||
        rows * cols * static_cast<long long>(sizeof(T)) > static_cast<long long>(pool::bytes)) {
      std::fprintf(stderr, "ROWSOFTMAX_BENCH_PROBE: skipped '%s'\n", entry.c_str());
      continue;
    }
    if (dtype != dtype_name<T>()) continue;
    const direction d = fwd ? direction::forward : direction::backward;
    if (config >= 0) {
      forced.config = static_cast<int>(config);
      forced.cluster = static_cast<int>(cluster);
      forced.stash = static_cast<int>(stash);
    }
    const std::string name =
        std::string("probe/") + (fwd ? "forward/" : "backward/") + dtype_name<T>() +
        "/rows:" + std::to_string(rows) + "/cols:" + std::to_string(cols) +
        "/config:" + std::to_string(config) + "x" + std::to_string(config < 0 ? 1 : cluster) +
        (stash >= 0 ? "/stash:" + std::to_string(stash) : std::string()) + suffix;
    register_timed(name, [=](benchmark::State& s) {
      softmax_benchmark<T>(s, name, d, rows, cols, forced, config == -2, static_cast<timing>(how));
    });
  }
}

/// Registers "<dir>/<dtype>/<group>/cols:N" (rows*cols = 2^27; rows of cols not a multiple of
/// the vector misaligned) planned, unless `planned_elsewhere`, and, where `differs(planned, c)`,
/// ".../<suffix>" forced through c, the first one-CTA configuration that `before` accepts and
/// that holds the row: the plan the planner took before a change, timed in the same run.
template <class T, class Before, class Differs>
void register_against_before(direction dir, char const* group, std::int64_t cols,
                             char const* suffix, Before before, Differs differs,
                             bool planned_elsewhere) {
  const std::int64_t rows = sweep_elems / cols;
  const int vec = static_cast<int>(16 / sizeof(T));
  const plan planned = plan_for<T>(dir, rows, cols, {vec, cols % vec != 0, true}, device_limits{});
  forced_config old;
  for (int c = detail::configs::first_one_cta;
       c <= detail::configs::widest_one_cta && old.config < 0; ++c)
    if (before(c) &&
        detail::window_capacity(detail::kernel_configs[c], vec, sizeof(T), 1) >=
            detail::row_windows(detail::kernel_configs[c], {vec, cols % vec != 0}, cols))
      old.config = c;
  if (old.config >= 0 && !differs(planned, old.config)) old = {};
  const std::string name = std::string(dir == direction::forward ? "forward/" : "backward/") +
                           dtype_name<T>() + "/" + group + "/cols:" + std::to_string(cols);
  for (forced_config config : {forced_config{}, old}) {
    if (config.config < 0 && planned_elsewhere) continue;
    const std::string n = config.config < 0 ? name : name + "/" + suffix;
    register_timed(
        n, [=](benchmark::State& s) { softmax_benchmark<T>(s, n, dir, rows, cols, config); });
    if (old.config < 0) break;  // planned as before: nothing to force
  }
}

/// Registers "<dir>/<dtype>/tiled/cols:N" (rows*cols = 2^27, contiguous, so misaligned where cols
/// is not a multiple of the vector) planned, unless `planned_elsewhere`, and, where that plan is
/// tiled, ".../untiled" forced through the plan of the same rows were they not contiguous (the
/// A/B of docs/tuning.md, Short rows).
template <class T>
void register_tiled(direction dir, std::int64_t cols, bool planned_elsewhere) {
  const std::int64_t rows = sweep_elems / cols;
  const int vec = static_cast<int>(16 / sizeof(T));
  const bool shifted = cols % vec != 0;
  const plan planned = plan_for<T>(dir, rows, cols, {vec, shifted, true}, device_limits{});
  const plan untiled = plan_for<T>(dir, rows, cols, {vec, shifted, false}, device_limits{});
  const std::string name = std::string(dir == direction::forward ? "forward/" : "backward/") +
                           dtype_name<T>() + "/tiled/cols:" + std::to_string(cols);
  for (bool forced : {false, true}) {
    if ((!forced && planned_elsewhere) || (forced && !planned.tiled)) continue;
    const std::string n = forced ? name + "/untiled" : name;
    const forced_config config = forced ? forced_config{untiled.config} : forced_config{};
    register_timed(
        n, [=](benchmark::State& s) { softmax_benchmark<T>(s, n, dir, rows, cols, config); });
  }
}

template <class T>
void register_type() {
  const std::int64_t sweep[] = {256,   512,   1000,  1024,  2048,   4096,   4097,   8192,  16384,
                                32000, 32768, 50257, 65536, 128256, 131072, 151936, 262144};
  for (direction dir : {direction::forward, direction::backward}) {
    const char* d = dir == direction::forward ? "forward" : "backward";
    // "<dir>/<dtype>/<group>cols:N", planned, rows * cols = 2^27.
    auto planned = [&](char const* group, std::int64_t cols) {
      const std::int64_t rows = std::max<std::int64_t>(1, sweep_elems / cols);
      const std::string name =
          std::string(d) + "/" + dtype_name<T>() + "/" + group + "cols:" + std::to_string(cols);
      register_timed(name,
                     [=](benchmark::State& s) { softmax_benchmark<T>(s, name, dir, rows, cols); });
    };
    for (std::int64_t cols : sweep) planned("", cols);
    // Rows between the sweep's of 16384-262144 columns: just above the cluster and staged
    // tiers' thresholds (a multiple of 8K or 16K elements, plus one: misaligned, few slots of the
    // last CTA used), and between them (docs/tuning.md, Where it falls short).
    for (std::int64_t cols :
         {16385, 18000, 20000,  24577,  28000,  32769,  40000,  49153,  57345,  65537,
          81921, 98305, 114689, 131073, 147457, 163841, 196609, 229377, 245761, 262143})
      planned("range/", cols);
    // Rows of one CTA that fill part of its threads' 128 bytes: forced through the smallest
    // configuration of 128 bytes a thread that holds the row, which the planner took before it
    // took the others (the A/B of docs/tuning.md, One-CTA register rows).
    for (std::int64_t cols : {260, 300, 520, 700, 1100, 2049, 2200, 3000, 4097, 4500, 5000, 6000,
                              7000, 8193, 9000, 10000, 12000})
      register_against_before<T>(
          dir, "fill", cols, "full", [](int c) { return detail::kernel_configs[c].bytes == 128; },
          [](plan const& p, int before) {
            return p.algo == algorithm::registers && p.config != before;
          },
          std::find(std::begin(sweep), std::end(sweep), cols) != std::end(sweep));
    // Short rows: forced through the one-row-a-thread configuration the planner took before it
    // gave rows of at most 16 vectors 8 rows a thread (the A/B of docs/tuning.md, Short rows).
    for (std::int64_t cols : {4, 8, 13, 16, 32, 60, 64, 100, 128})
      register_against_before<T>(
          dir, "short", cols, "one_row",
          [dir](int c) {
            return detail::has_kernel(c, dir, static_cast<int>(16 / sizeof(T)), sizeof(T));
          },
          [](plan const& p, int) { return p.rows_per_thread > 1; }, false);
    // Short contiguous rows, misaligned where cols is not a multiple of the vector: tiled, and
    // forced through the plan they had untiled.
    for (std::int64_t cols : {4, 5, 13, 60, 77, 100, 120})
      register_tiled<T>(dir, cols, cols == 4 || cols == 13 || cols == 60 || cols == 100);
    // Rows longer than a cluster holds: rows * cols = 2^27, at least 8 rows.
    for (int lg = 20; lg <= 24; ++lg) {
      const std::int64_t cols = std::int64_t{1} << lg;
      const std::int64_t rows = std::max<std::int64_t>(8, sweep_elems / cols);
      if (rows * cols * static_cast<std::int64_t>(sizeof(T)) >
          static_cast<std::int64_t>(pool::bytes))
        continue;
      for (bool workspace : {false, true}) {
        const std::string name = std::string(d) + "/" + dtype_name<T>() +
                                 (workspace ? "/long/workspace/cols:" : "/long/cols:") +
                                 std::to_string(cols);
        register_timed(name, [=](benchmark::State& s) {
          softmax_benchmark<T>(s, name, dir, rows, cols, {}, workspace);
        });
      }
    }
  }
  // The fused launchers: "fused/<log|scaled>/<dir>/<dtype>/cols:N", rows * cols = 2^27 (long
  // rows: at least 8, with a workspace), beside the plain sweep's rows of the same shape.
  for (direction dir : {direction::forward, direction::backward})
    for (fused_variant variant : {fused_variant::log, fused_variant::scaled})
      for (std::int64_t cols : {std::int64_t{1000}, std::int64_t{4096}, std::int64_t{32000},
                                std::int64_t{131072}, std::int64_t{1} << 20}) {
        const bool long_row = cols == std::int64_t{1} << 20;
        const std::int64_t rows = std::max<std::int64_t>(long_row ? 8 : 1, sweep_elems / cols);
        if (rows * cols * static_cast<std::int64_t>(sizeof(T)) >
            static_cast<std::int64_t>(pool::bytes))
          continue;
        const std::string name =
            std::string("fused/") + (variant == fused_variant::log ? "log/" : "scaled/") +
            (dir == direction::forward ? "forward/" : "backward/") + dtype_name<T>() +
            (long_row ? "/long/workspace" : "") + "/cols:" + std::to_string(cols);
        register_timed(name, [=](benchmark::State& s) {
          fused_benchmark<T>(s, name, dir, variant, rows, cols, long_row);
        });
      }
  // The masked launchers: "fused/<causal|lengths>/<dir>/<dtype>/cols:N", rows * cols = 2^27.
  for (direction dir : {direction::forward, direction::backward})
    for (mask_variant variant : {mask_variant::causal, mask_variant::lengths})
      for (std::int64_t cols : variant == mask_variant::causal
                                   ? std::vector<std::int64_t>{512, 2048, 4096}
                                   : std::vector<std::int64_t>{4096, 32000, 131072}) {
        const std::int64_t rows = sweep_elems / cols;
        const std::string name = std::string("fused/") +
                                 (variant == mask_variant::causal ? "causal/" : "lengths/") +
                                 (dir == direction::forward ? "forward/" : "backward/") +
                                 dtype_name<T>() + "/cols:" + std::to_string(cols);
        register_timed(name, [=](benchmark::State& s) {
          masked_benchmark<T>(s, name, dir, variant, rows, cols);
        });
      }
  // The boolean mask: "fused/boolmask/<dir>/<dtype>/cols:N", rows * cols = 2^27 (attention
  // scores of 8 heads of N queries; vocabulary rows past 4096 columns, one mask row for all).
  for (direction dir : {direction::forward, direction::backward})
    for (std::int64_t cols : {512, 2048, 4096, 32768, 131072, 1048576}) {
      const std::int64_t rows = sweep_elems / cols;
      const std::string name = std::string("fused/boolmask/") +
                               (dir == direction::forward ? "forward/" : "backward/") +
                               dtype_name<T>() + "/cols:" + std::to_string(cols);
      register_timed(
          name, [=](benchmark::State& s) { bool_mask_benchmark<T>(s, name, dir, rows, cols); });
    }
  // The additive bias, forward: "fused/bias/forward/<dtype>/cols:N", rows * cols = 2^27 (a bias
  // of the input type a row up to 4096 columns; one float bias row for all past that).
  for (std::int64_t cols : {512, 2048, 4096, 32768, 131072, 1048576}) {
    const std::int64_t rows = sweep_elems / cols;
    const std::string name =
        std::string("fused/bias/forward/") + dtype_name<T>() + "/cols:" + std::to_string(cols);
    register_timed(name, [=](benchmark::State& s) { bias_benchmark<T>(s, name, rows, cols); });
  }
  register_probes<T>();
}

}  // namespace rowsoftmax::bench
