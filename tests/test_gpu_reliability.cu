// SPDX-License-Identifier: Apache-2.0
// Reliability on the GPU: many host threads calling the launchers at once from the process's
// first call (and on every device), bitwise-identical outputs run to run, across streams and in
// replayed graphs on every tier, and tensors of more than 2^31 elements on every tier.
//
// Compile once: this unit includes <rowsoftmax/extern.cuh> and compiles no kernel; the launchers
// are instantiated in warnings_tu.cu, linked in. Run the binary whole (no filter, no shuffle) so
// that Concurrency.ThreadsFromTheFirstCall is the process's first call: it warms the per-device
// caches (limits, cluster occupancy, kernel attributes) from 32 threads at once.
#include <rowsoftmax/extern.cuh>

#include <atomic>
#include <chrono>
#include <iostream>
#include <set>

#include "gpu_harness.cuh"

namespace rowsoftmax::test {
namespace {

/// One call of a plain launcher: direction, size, and how it is made.
struct call_spec {
  direction dir = direction::forward;
  std::int64_t rows = 1, cols = 1;
  bool workspace = false;  ///< the workspace overload (size query, then the call)
  bool in_place = false;   ///< the output is the (first) input
  std::string str(char const* type) const {
    std::ostringstream s;
    s << (dir == direction::forward ? "forward " : "backward ") << type << " " << rows << "x"
      << cols << (workspace ? " workspace" : "") << (in_place ? " in-place" : "");
    return s.str();
  }
};

/// A call's tensors, contiguous from 256-byte aligned allocations, each followed by `guard`
/// elements: forward a = x uniform in [-8, 8]; backward a = dy uniform in [-1, 1], b = y uniform
/// in [0, 2 / cols) (rows that sum to about 1, as a softmax's). The output is
/// `out`, poisoned, or a where in place.
template <class T>
struct tensors {
  static constexpr std::int64_t guard = 64;
  call_spec c;
  std::vector<T> a, b, out_init;
  device_buffer<T> da, db, dout;

  tensors(call_spec const& spec, std::uint64_t seed)
      : c(spec),
        a(elems()),
        b(c.dir == direction::backward ? elems() : 0),
        out_init(c.in_place ? 0 : elems(), poison<T>()),
        da(elems()),
        db(b.empty() ? 1 : b.size()),
        dout(c.in_place ? 1 : elems()) {
    rng g(seed);
    if (c.dir == direction::forward) {
      fill_random(a, g, -8.0, 8.0);
    } else {
      fill_random(a, g, -1.0, 1.0);
      fill_random(b, g, 0.0, 2.0 / static_cast<double>(c.cols));
    }
  }
  std::size_t elems() const { return static_cast<std::size_t>(c.rows * c.cols + guard); }
  T* out() const { return c.in_place ? da.ptr : dout.ptr; }

  /// Uploads the inputs and the poisoned output (so each run starts from the same bytes).
  cudaError_t upload() {
    if (da.ptr == nullptr || db.ptr == nullptr || dout.ptr == nullptr)
      return cudaErrorMemoryAllocation;
    cudaError_t e = da.upload(a);
    if (e == cudaSuccess && !b.empty()) e = db.upload(b);
    if (e == cudaSuccess && !c.in_place) e = dout.upload(out_init);
    return e;
  }
  /// The workspace bytes the call asks for (0 without the workspace overload).
  cudaError_t workspace_bytes(std::size_t* bytes) const {
    *bytes = 0;
    if (!c.workspace) return cudaSuccess;
    return c.dir == direction::forward
               ? softmax_forward<T>(nullptr, bytes, da.ptr, c.cols, out(), c.cols, c.rows, c.cols)
               : softmax_backward<T>(nullptr, bytes, da.ptr, c.cols, db.ptr, c.cols, out(), c.cols,
                                     c.rows, c.cols);
  }
  /// Enqueues the call on `stream` (`ws`: a workspace of the size workspace_bytes gave).
  cudaError_t launch(void* ws, std::size_t bytes, cudaStream_t stream) const {
    if (c.dir == direction::forward)
      return c.workspace
                 ? softmax_forward<T>(ws, &bytes, da.ptr, c.cols, out(), c.cols, c.rows, c.cols,
                                      stream)
                 : softmax_forward<T>(da.ptr, c.cols, out(), c.cols, c.rows, c.cols, stream);
    return c.workspace ? softmax_backward<T>(ws, &bytes, da.ptr, c.cols, db.ptr, c.cols, out(),
                                             c.cols, c.rows, c.cols, stream)
                       : softmax_backward<T>(da.ptr, c.cols, db.ptr, c.cols, out(), c.cols, c.rows,
                                             c.cols, stream);
  }
  /// The plan the call gets.
  cudaError_t plan_of(plan* p) const {
    return c.dir == direction::forward
               ? softmax_forward_plan<T>(da.ptr, c.cols, out(), c.cols, c.rows, c.cols, p,
                                         c.workspace)
               : softmax_backward_plan<T>(da.ptr, c.cols, db.ptr, c.cols, out(), c.cols, c.rows,
                                          c.cols, p, c.workspace);
  }
  /// Uploads, runs the call on `stream` (with a workspace of the size it asks for), waits for it
  /// and downloads the output buffer into `out`.
  cudaError_t run(cudaStream_t stream, std::vector<T>& out) {
    std::size_t bytes = 0;
    cudaError_t e = upload();
    if (e == cudaSuccess) e = workspace_bytes(&bytes);
    scratch ws(bytes);
    if (e == cudaSuccess && bytes > 0 && ws.ptr == nullptr) e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = launch(ws.ptr ? ws.ptr : &bytes, bytes, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e == cudaSuccess) e = download(out);
    return e;
  }
  cudaError_t download(std::vector<T>& h) const {
    return c.in_place ? da.download(h) : dout.download(h);
  }

  /// Every row of `out` (the output buffer, downloaded) against the float64 reference, and every
  /// element past the rows untouched. "" when it holds.
  std::string check(std::vector<T> const& out) const {
    const shape s{c.rows, c.cols, c.cols, c.cols, 0, 0, c.in_place, guard};
    auto ref_row = [&](std::int64_t r, std::vector<double>& ref, std::vector<double>& scale) {
      std::vector<double> u(static_cast<std::size_t>(c.cols)), v(u.size());
      for (std::int64_t j = 0; j < c.cols; ++j)
        u[static_cast<std::size_t>(j)] =
            dtype<T>::to_double(a[static_cast<std::size_t>(r * c.cols + j)]);
      if (c.dir == direction::forward) {
        reference_forward(u.data(), ref.data(), c.cols);
        for (std::size_t j = 0; j < ref.size(); ++j) scale[j] = std::abs(ref[j]);
        return;
      }
      for (std::int64_t j = 0; j < c.cols; ++j)
        v[static_cast<std::size_t>(j)] =
            dtype<T>::to_double(b[static_cast<std::size_t>(r * c.cols + j)]);
      reference_backward(u.data(), v.data(), ref.data(), c.cols);
      double dot = 0;
      for (std::size_t j = 0; j < u.size(); ++j) dot += std::abs(u[j] * v[j]);
      for (std::size_t j = 0; j < u.size(); ++j) scale[j] = std::abs(v[j]) * (std::abs(u[j]) + dot);
    };
    return compare<T>(s, out, c.in_place ? a : out_init, 0, c.cols, ref_row,
                      c.dir == direction::forward);
  }
};

/// Runs `c` once on `stream` with fresh data from `seed` and checks it. "" when it holds.
template <class T>
std::string run_and_check(call_spec const& c, std::uint64_t seed, cudaStream_t stream) {
  tensors<T> t(c, seed);
  std::vector<T> out;
  if (const cudaError_t e = t.run(stream, out); e != cudaSuccess)
    return c.str(dtype<T>::name) + ": " + cudaGetErrorName(e);
  const std::string err = t.check(out);
  return err.empty() ? "" : c.str(dtype<T>::name) + ": " + err;
}

template <class T>
struct type_tag {
  using type = T;
};

/// Calls `f(type_tag<T>{})` for T the i-th of float, __half and __nv_bfloat16.
template <class F>
auto with_type(int i, F&& f) {
  if (i == 0) return f(type_tag<float>{});
  if (i == 1) return f(type_tag<__half>{});
  return f(type_tag<__nv_bfloat16>{});
}

/// Shapes that reach every tier on an H100/H200: short rows (tiled), one CTA a row, a cluster
/// (staged for 16-bit forward), and split rows (with a workspace, or through the output's first
/// row; in place they stream).
const std::vector<std::pair<std::int64_t, std::int64_t>> tier_shapes = {
    {1000, 64}, {97, 3000}, {3, 65536}, {2, std::int64_t{1} << 21}};

// Must be the binary's first test (see the top of the file). 32 threads, spread over the
// devices, start together; each makes 12 calls (every type and direction, with and without a
// workspace, in place or not, across the tier shapes) on its own stream and checks each output.
TEST(Concurrency, ThreadsFromTheFirstCall) {
  ROWSOFTMAX_REQUIRE_GPU();
  int devices = 0;
  ROWSOFTMAX_CUDA_OK(cudaGetDeviceCount(&devices));
  constexpr int threads = 32, calls = 12;
  std::vector<std::string> errors(threads);
  std::atomic<int> ready{0};
  auto body = [&](int t) {
    const int device = t % devices;
    cudaStream_t stream = nullptr;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    ++ready;
    while (ready.load() < threads) std::this_thread::yield();
    if (e != cudaSuccess) {
      errors[static_cast<std::size_t>(t)] = std::string("setup: ") + cudaGetErrorName(e);
      return;
    }
    for (int k = 0; k < calls && errors[static_cast<std::size_t>(t)].empty(); ++k) {
      const int combo = (t + k) % calls;  // type, direction, workspace: all 12 a thread
      auto const& shape = tier_shapes[static_cast<std::size_t>((t / 3 + k) % tier_shapes.size())];
      call_spec c{combo % 2 == 0 ? direction::forward : direction::backward, shape.first,
                  shape.second, (combo / 2) % 2 == 1, (t + k) % 5 == 0};
      const std::string err = with_type(combo / 4, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return run_and_check<T>(c, seed_of(t, k, device), stream);
      });
      if (!err.empty())
        errors[static_cast<std::size_t>(t)] =
            "thread " + std::to_string(t) + " device " + std::to_string(device) + " " + err;
    }
    cudaStreamDestroy(stream);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  for (auto const& err : errors) EXPECT_EQ(err, "");
  std::cout << "[ info     ] " << threads << " threads x " << calls << " calls on " << devices
            << " device(s)\n";
}

// A call on device 1 after device 0 was used, then on device 0 after device 1 (the per-device
// caches and kernel attributes kept apart).
TEST(Concurrency, EachDeviceAfterTheOther) {
  ROWSOFTMAX_REQUIRE_GPU();
  int devices = 0;
  ROWSOFTMAX_CUDA_OK(cudaGetDeviceCount(&devices));
  if (devices < 2) GTEST_SKIP() << "one device: the two-device calls need two";
  for (int device : {0, 1, 0, 1}) {
    ROWSOFTMAX_CUDA_OK(cudaSetDevice(device));
    for (auto const& shape : tier_shapes)
      for (direction dir : {direction::forward, direction::backward})
        EXPECT_EQ(run_and_check<__nv_bfloat16>({dir, shape.first, shape.second, true, false},
                                               seed_of(shape.second, device), nullptr),
                  "")
            << "device " << device;
  }
  ROWSOFTMAX_CUDA_OK(cudaSetDevice(0));
}

/// The tier a plan runs on, as determinism and 64-bit coverage count them: its algorithm and
/// the variants that run other code.
std::string tier_of(plan const& p) {
  std::string s = to_string(p.algo);
  if (p.tiled) s += " tiled";
  if (p.algo == algorithm::registers && p.rows_per_cta > 1 && !p.tiled) s += " short";
  if (p.algo == algorithm::streaming && p.cluster_size > 1) s += " clustered";
  if (p.workspace_in_output) s += " (workspace in output)";
  return s;
}

/// The plan a call `c` gets on the current device (asked with addresses that do not overlap:
/// the query reads no tensor).
template <class T>
cudaError_t plan_of(call_spec const& c, plan* p) {
  T* const a = fake_tensor<T>(0);
  T* const o = c.in_place ? a : fake_tensor<T>(2);
  return c.dir == direction::forward
             ? softmax_forward_plan<T>(a, c.cols, o, c.cols, c.rows, c.cols, p, c.workspace)
             : softmax_backward_plan<T>(a, c.cols, fake_tensor<T>(1), c.cols, o, c.cols, c.rows,
                                        c.cols, p, c.workspace);
}

/// A call and the plan it gets.
struct tier_example {
  call_spec c;
  plan p;
};

/// The first call of each tier (tier_of) among the candidates, in order: each direction of
/// `dirs`, each of `cols_list`, each of `rows_for(cols)`, without and with a workspace, out of
/// place and in place.
template <class T, class RowsFor>
std::vector<tier_example> first_of_each_tier(std::vector<direction> const& dirs,
                                             std::vector<std::int64_t> const& cols_list,
                                             RowsFor const& rows_for) {
  std::vector<tier_example> out;
  std::set<std::string> seen;
  for (direction dir : dirs)
    for (std::int64_t cols : cols_list)
      for (std::int64_t rows : rows_for(cols))
        for (bool workspace : {false, true})
          for (bool in_place : {false, true}) {
            const call_spec c{dir, rows, cols, workspace, in_place};
            plan p;
            if (plan_of<T>(c, &p) == cudaSuccess && seen.insert(tier_of(p)).second)
              out.push_back({c, p});
          }
  return out;
}

/// Runs `c` five times from the same inputs: twice on the legacy stream, on a new stream, and
/// as a CUDA graph replayed twice; "" when every output buffer (guard included) is bitwise the
/// first's.
template <class T>
std::string five_runs_agree(call_spec const& c, std::uint64_t seed) {
  tensors<T> t(c, seed);
  std::size_t bytes = 0;
  cudaError_t e = t.workspace_bytes(&bytes);
  scratch ws(bytes);
  void* w = ws.ptr ? ws.ptr : &bytes;
  std::vector<T> first, next;
  cudaStream_t stream = nullptr;
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::string what;
  for (int run = 0; run < 4 && e == cudaSuccess && what.empty(); ++run) {
    e = t.upload();
    if (e != cudaSuccess) break;
    if (run < 2) {
      e = t.launch(w, bytes, nullptr);
    } else if (run == 2) {
      e = t.launch(w, bytes, stream);
    } else {
      // The graph's first replay, then inputs uploaded again and the second replay.
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
      if (e == cudaSuccess) {
        const cudaError_t launch = t.launch(w, bytes, stream);
        e = cudaStreamEndCapture(stream, &graph);
        if (launch != cudaSuccess) e = launch;
      }
      if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
      if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
      if (e == cudaSuccess) e = t.upload();
      if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = t.download(run == 0 ? first : next);
    if (e == cudaSuccess && run > 0 &&
        std::memcmp(first.data(), next.data(), first.size() * sizeof(T)) != 0) {
      std::size_t i = 0;
      while (same_bits(first[i], next[i])) ++i;
      what = std::string(run == 1   ? "a second run"
                         : run == 2 ? "a run on another stream"
                                    : "a replayed graph") +
             " differs at element " + std::to_string(i);
    }
  }
  if (stream) cudaStreamDestroy(stream);
  if (e != cudaSuccess) return cudaGetErrorName(e);
  if (what.empty()) what = t.check(first);  // and the output is right
  return what;
}

// Same inputs, same outputs, bit for bit, on every tier: the combines run in a fixed order
// (no atomics on values), so nothing depends on which CTA finishes first.
TEST(Determinism, BitwiseAcrossRunsStreamsAndGraphsOnEveryTier) {
  ROWSOFTMAX_REQUIRE_GPU();
  // Rows of up to 2^24 elements.
  auto rows_for = [](std::int64_t cols) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r : {1, 4, 1000})
      if (r * cols <= (std::int64_t{1} << 24)) rows.push_back(r);
    return rows;
  };
  const std::vector<std::int64_t> cols_list = {
      48, 1000, 4096, 65536, 300000, std::int64_t{1} << 20, (std::int64_t{1} << 22) + 3};
  std::set<algorithm> ran;
  for (int type = 0; type < 3; ++type)
    for (direction dir : {direction::forward, direction::backward})
      with_type(type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (auto const& [c, p] : first_of_each_tier<T>({dir}, cols_list, rows_for)) {
          SCOPED_TRACE(c.str(dtype<T>::name) + " (" + tier_of(p) + ")");
          EXPECT_EQ(five_runs_agree<T>(c, seed_of(c.rows, c.cols, type)), "");
          ran.insert(p.algo);
        }
        return 0;
      });
  // Every algorithm ran.
  for (algorithm a : {algorithm::registers, algorithm::cluster, algorithm::streaming,
                      algorithm::split, algorithm::staged, algorithm::staged_split})
    EXPECT_EQ(ran.count(a), 1u) << to_string(a) << " not reached";
}

/// Row `r` of a large call checked against the float64 reference in the column windows `w`,
/// the row's statistics (max and sum, or sum(dy * y)) taken over the whole row on the host's
/// cores. "" when it holds.
template <class T>
std::string check_windows(tensors<T> const& t, std::vector<T> const& out, std::int64_t r,
                          std::vector<std::pair<std::int64_t, std::int64_t>> const& w) {
  auto const& c = t.c;
  auto val = [&](std::vector<T> const& v, std::int64_t j) {
    return dtype<T>::to_double(v[static_cast<std::size_t>(r * c.cols + j)]);
  };
  const bool fwd = c.dir == direction::forward;
  const std::int64_t chunks = (c.cols + host_chunk - 1) / host_chunk;
  std::vector<double> m(static_cast<std::size_t>(chunks), -INFINITY),
      sum(static_cast<std::size_t>(chunks), 0.0), mag(static_cast<std::size_t>(chunks), 0.0);
  auto over_chunks = [&](auto&& f) {
    parallel_rows(chunks, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t k = c0; k < c1; ++k)
        for (std::int64_t j = k * host_chunk; j < std::min(c.cols, (k + 1) * host_chunk); ++j)
          f(static_cast<std::size_t>(k), j);
    });
  };
  if (fwd) over_chunks([&](std::size_t k, std::int64_t j) { m[k] = std::max(m[k], val(t.a, j)); });
  const double row_max = fwd ? *std::max_element(m.begin(), m.end()) : 0.0;
  over_chunks([&](std::size_t k, std::int64_t j) {
    if (fwd) {
      sum[k] += std::exp(val(t.a, j) - row_max);
    } else {
      sum[k] += val(t.a, j) * val(t.b, j);
      mag[k] += std::abs(val(t.a, j) * val(t.b, j));
    }
  });
  double total = 0, dot_mag = 0;
  for (std::size_t k = 0; k < sum.size(); ++k) {
    total += sum[k];
    dot_mag += mag[k];
  }
  for (auto [j0, j1] : w)
    for (std::int64_t j = j0; j < j1; ++j) {
      const double o = val(out, j);
      double ref, scale;
      if (fwd) {
        ref = std::exp(val(t.a, j) - row_max) / total;
        scale = ref;
      } else {
        const double dy = val(t.a, j), y = val(t.b, j);
        ref = y * (dy - total);
        scale = std::abs(y) * (std::abs(dy) + dot_mag);
      }
      if (!(std::abs(o - ref) <= tolerance<T>::rel * scale + tolerance<T>::abs)) {
        std::ostringstream msg;
        msg << "row " << r << " col " << j << ": got " << o << ", reference " << ref;
        return msg.str();
      }
    }
  return "";
}

/// A call of more than 2^31 elements checked on sampled rows (the first two, the last two and
/// 28 drawn; rows of more than 2^20 columns in 16 windows of 4096 elements, the first and last
/// included) and the guard past the tensor untouched. "" when it holds.
template <class T>
std::string run_large(call_spec const& c, std::uint64_t seed) {
  tensors<T> t(c, seed);
  std::vector<T> out;
  if (const cudaError_t e = t.run(nullptr, out); e != cudaSuccess) return cudaGetErrorName(e);
  std::vector<T> const& before = c.in_place ? t.a : t.out_init;
  for (std::size_t i = static_cast<std::size_t>(c.rows * c.cols); i < out.size(); ++i)
    if (!same_bits(out[i], before[i])) return "guard element " + std::to_string(i) + " written";
  rng g(seed + 1);
  std::vector<std::int64_t> rows{0, c.rows - 1};
  if (c.rows > 2) rows.insert(rows.end(), {1, c.rows - 2});
  for (int k = 0; k < 28 && c.rows > 4; ++k) rows.push_back(g.below(c.rows));
  for (std::int64_t r : rows) {
    std::vector<std::pair<std::int64_t, std::int64_t>> windows;
    const std::int64_t w = 4096;
    if (c.cols <= (std::int64_t{1} << 20)) {
      windows.emplace_back(0, c.cols);
    } else {
      windows.emplace_back(0, w);
      windows.emplace_back(c.cols - w, c.cols);
      for (int k = 0; k < 14; ++k) {
        const std::int64_t j = g.below(c.cols - w);
        windows.emplace_back(j, j + w);
      }
    }
    if (std::string err = check_windows(t, out, r, windows); !err.empty()) return err;
  }
  return "";
}

/// One call of more than 2^31 elements for each bf16 tier (the first candidate of each, forward
/// first), then one row of 2^31 + 17 columns with and without a workspace, both directions;
/// each with what it stands for.
std::vector<std::pair<call_spec, std::string>> large_examples() {
  const std::int64_t big = std::int64_t{1} << 31;
  std::vector<std::pair<call_spec, std::string>> out;
  for (auto const& [c, p] : first_of_each_tier<__nv_bfloat16>(
           {direction::forward, direction::backward},
           {64, 2048, 16384, 65536, 262144, std::int64_t{1} << 22},
           [&](std::int64_t cols) { return std::vector<std::int64_t>{big / cols + 1}; }))
    out.emplace_back(c, tier_of(p));
  for (direction dir : {direction::forward, direction::backward})
    for (bool workspace : {false, true})
      out.emplace_back(call_spec{dir, 1, big + 17, workspace, false}, "one row of 2^31 + 17");
  return out;
}

// Tensors of more than 2^31 elements (4 GB of bf16 each) on every tier.
TEST(Large, MoreThan2To31ElementsOnEveryTier) {
  ROWSOFTMAX_REQUIRE_GPU();
  std::size_t free = 0, total = 0;
  ROWSOFTMAX_CUDA_OK(cudaMemGetInfo(&free, &total));
  if (free < (std::size_t{14} << 30)) GTEST_SKIP() << "needs 14 GB of free device memory";
  for (auto const& [c, tier] : large_examples()) {
    const auto start = std::chrono::steady_clock::now();
    const std::string err = run_large<__nv_bfloat16>(c, seed_of(c.rows, c.cols));
    EXPECT_EQ(err, "") << c.str("bfloat16") << " (" << tier << ")";
    std::cout << "[ info     ] " << c.str("bfloat16") << " (" << tier
              << "): " << (err.empty() ? "ok" : "FAILED") << " in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s\n";
  }
}

}  // namespace
}  // namespace rowsoftmax::test
