// SPDX-License-Identifier: Apache-2.0
// From a plan to a launched kernel: the one place where runtime plan values become template
// arguments, plus the per-kernel cluster checks (non-portable size 16, occupancy) done once per
// device and kernel, and the per-device limits cache.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>

#include "../plan.hpp"
#include "host.hpp"
#include "kernels.cuh"
#include "ops.cuh"

namespace rowsoftmax::detail {

/// Fills `limits->clusters_at_two_an_sm` for `device`: cudaOccupancyMaxActiveClusters for an
/// empty kernel of half an SM's threads (two CTAs an SM), every size up to 16; zeros without
/// clusters.
inline cudaError_t query_cluster_fill(int device, device_limits* limits) noexcept {
  for (int& c : limits->clusters_at_two_an_sm) c = 0;
  if (limits->max_cluster_size < 2) return cudaSuccess;
  int threads = 0;
  ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  threads = threads / 2 < 1024 ? threads / 2 : 1024;
  auto kernel = &cluster_fill_kernel<1024>;
  ROWSOFTMAX_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (int n = 1; n <= limits->max_cluster_size && n <= max_cluster_size; ++n) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(n);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(n), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
    if (err == cudaErrorInvalidClusterSize) {  // a size the device refuses: none run
      (void)cudaGetLastError();
      clusters = 0;
    } else if (err != cudaSuccess) {
      return err;
    }
    limits->clusters_at_two_an_sm[n] = clusters;
  }
  return cudaSuccess;
}

/// Devices whose limits and kernel attributes are cached (others are asked every time).
inline constexpr int max_cached_devices = 64;

/// Fills `limits` for `device`, querying the runtime once per device per process.
inline cudaError_t cached_device_limits(int device, device_limits* limits) noexcept {
  static std::atomic<int> state[max_cached_devices];  // 0 unknown, 1 being filled, 2 ready
  static device_limits cache[max_cached_devices];
  auto query = [](int dev, device_limits* out) -> cudaError_t {
    int sms = 0, major = 0, minor = 0, clusters = 0, smem_sm = 0, smem_cta = 0;
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev));
    ROWSOFTMAX_TRY(
        cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&smem_cta, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    out->sm_count = sms;
    out->compute_capability = major * 10 + minor;
    out->max_cluster_size = clusters != 0 && major >= 9 ? 16 : 1;
    out->shared_bytes_per_sm = smem_sm;
    out->shared_bytes_per_cta = smem_cta;
    return query_cluster_fill(dev, out);
  };
  if (device < 0 || device >= max_cached_devices) return query(device, limits);
  for (;;) {
    int s = state[device].load(std::memory_order_acquire);
    if (s == 2) {
      *limits = cache[device];
      return cudaSuccess;
    }
    if (s == 0 && state[device].compare_exchange_strong(s, 1, std::memory_order_acquire)) {
      const cudaError_t err = query(device, &cache[device]);
      state[device].store(err == cudaSuccess ? 2 : 0, std::memory_order_release);
      if (err != cudaSuccess) return err;
      *limits = cache[device];
      return cudaSuccess;
    }
    std::this_thread::yield();
  }
}

/// The kernel of configuration `Config` for `Op` and width `V`, as this unit compiled it.
template <class Op, int V, int Config>
constexpr auto unit_kernel_ptr() {
  if constexpr (kernel_configs[Config].algo == algorithm::streaming) {
    return &streaming_kernel<Op, V, Config>;
  } else if constexpr (kernel_configs[Config].algo == algorithm::split) {
    return &split_kernel<Op, V, Config>;
  } else if constexpr (kernel_configs[Config].algo == algorithm::staged) {
    return &staged_kernel<Op, V, Config>;
  } else if constexpr (kernel_configs[Config].algo == algorithm::staged_split) {
    return &staged_split_kernel<Op, V, Config>;
  } else if constexpr (kernel_configs[Config].tiled) {
    return &tiled_kernel<Op, V, Config>;
  } else {
    return &resident_kernel<resident_op_t<Op, Config>, V, Config>;
  }
}

/// The kernel of configuration `Config` for `Op` and width `V`, one pointer a program: the one
/// every attribute call (prepare_kernel, once a program), occupancy query and launch uses. nvcc
/// 13 gives each unit that compiles a template kernel its own host stub, and so its own copy of
/// the kernel: through unit_kernel_ptr, a unit could launch a copy whose attributes another
/// unit's call set on its own (cudaErrorInvalidClusterSize, cudaErrorInvalidValue on sm_90). The
/// first unit to ask fixes the pointer: a function-local static, one a program, initialized when
/// first asked (through a volatile, so that no unit folds its own constant in its place).
template <class Op, int V, int Config>
auto kernel_ptr() {
  static auto const kernel = [] {
    auto volatile own = unit_kernel_ptr<Op, V, Config>();
    return own;
  }();
  return kernel;
}

/// Whether configuration `config` has a kernel for `Op` and width `V`: has_kernel's rule, and
/// no tiled kernel where the op's output type is not its input's (tiled rows are normalized over
/// the input's tile; row_layout::contiguous is false for such calls, so no plan names one).
template <class Op>
constexpr bool op_has_kernel(int config, int v) {
  using T = typename Op::value_type;
  return has_kernel(config, Op::dir, v, sizeof(T)) &&
         (std::is_same_v<typename Op::output_type, T> || !kernel_configs[config].tiled);
}

/// Calls f(std::integral_constant<int, V>, std::integral_constant<int, Config>) for the plan's
/// vector width and configuration: the switch from plan to template arguments, instantiated for
/// the configurations that have a kernel for the op and the width (has_kernel) alone. Any other
/// configuration gives cudaErrorInvalidValue.
template <class Op, class F, int V, std::size_t... I>
cudaError_t visit_configs(int config, F&& f, std::integral_constant<int, V> v,
                          std::index_sequence<I...>) {
  cudaError_t err = cudaErrorInvalidValue;  // an unknown configuration
  (void)((config == static_cast<int>(I) && (
                                               err =
                                                   [&] {
                                                     constexpr int c = static_cast<int>(I);
                                                     if constexpr (!op_has_kernel<Op>(c, V)) {
                                                       return cudaErrorInvalidValue;
                                                     } else {
                                                       return f(v,
                                                                std::integral_constant<int, c>{});
                                                     }
                                                   }(),
                                               true)) ||
         ...);
  return err;
}

template <class Op, class F>
cudaError_t visit_plan(plan const& p, F&& f) {
  constexpr int vmax = 16 / sizeof(typename Op::value_type);
  const auto configs = std::make_index_sequence<num_kernel_configs>{};
  if (p.vec == vmax)
    return visit_configs<Op>(p.config, f, std::integral_constant<int, vmax>{}, configs);
  if (p.vec == 1) return visit_configs<Op>(p.config, f, std::integral_constant<int, 1>{}, configs);
  return cudaErrorInvalidValue;
}

inline cudaLaunchConfig_t launch_config(plan const& p, cudaStream_t stream,
                                        cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(p.grid_ctas), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(p.threads_per_cta), 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 0;
  if (kernel_configs[p.config].clustered) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(p.cluster_size);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.numAttrs = 1;
  }
  return cfg;
}

/// Dynamic shared memory of a plan's CTAs: the stash of a streaming or split plan (its whole
/// tiles, then its half tiles), the row share of a staged or staged split one.
template <class Op>
constexpr std::size_t dynamic_smem_bytes(plan const& p) {
  kernel_config const& c = kernel_configs[p.config];
  if (stages(c)) return static_cast<std::size_t>(staging_bytes(c));
  return static_cast<std::size_t>(p.stash_tiles * stash_tile_bytes(c, Op::inputs) +
                                  p.stash_halves * stash_half_bytes(c));
}

inline constexpr int max_cached_tiles = 8;   // stash_tiles 0..7
inline constexpr int max_cached_halves = 4;  // stash_halves 0..3
inline constexpr int max_cached_stash = max_cached_tiles * max_cached_halves;

/// Whether the answers for `p` on `device` have a slot in the per-kernel caches below (other
/// devices and stashes, which only forced plans have, are asked every time).
inline bool cacheable(plan const& p, int device) {
  return device >= 0 && device < max_cached_devices && p.stash_tiles >= 0 &&
         p.stash_tiles < max_cached_tiles && p.stash_halves >= 0 &&
         p.stash_halves < max_cached_halves;
}

/// A cacheable plan's stash (whole and half tiles, one slot for each pair), the key of the
/// per-kernel caches below.
inline int stash_key(plan const& p) {
  return p.stash_tiles * max_cached_halves + p.stash_halves;
}

/// Once per device and kernel: allows a clustered kernel clusters of up to 16 CTAs and, for a
/// plan with dynamic shared memory (a stash, a staged row share), the kernel all the dynamic
/// shared memory a CTA may have (the opt-in less its static shared memory). A kernel never
/// launched with dynamic shared memory keeps its default limit.
template <class Op, int V, int Config>
cudaError_t prepare_kernel(plan const& p, int device) {
  static std::atomic<bool> clustered[max_cached_devices], sized[max_cached_devices];
  const bool cached = device >= 0 && device < max_cached_devices;
  auto kernel = kernel_ptr<Op, V, Config>();
  if constexpr (kernel_configs[Config].clustered) {
    if (!(cached && clustered[device].load(std::memory_order_relaxed))) {
      ROWSOFTMAX_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      if (cached) clustered[device].store(true, std::memory_order_relaxed);
    }
  }
  if constexpr (kernel_configs[Config].algo != algorithm::registers &&
                kernel_configs[Config].algo != algorithm::cluster) {
    if (dynamic_smem_bytes<Op>(p) > 0 &&
        !(cached && sized[device].load(std::memory_order_relaxed))) {
      int optin = 0;
      cudaFuncAttributes fa{};
      ROWSOFTMAX_TRY(
          cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
      ROWSOFTMAX_TRY(cudaFuncGetAttributes(&fa, kernel));
      ROWSOFTMAX_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          optin - static_cast<int>(fa.sharedSizeBytes)));
      if (cached) sized[device].store(true, std::memory_order_relaxed);
    }
  }
  return cudaSuccess;
}

/// Whether the kernel runs clusters of `p.cluster_size` CTAs with `p`'s stash on `device`
/// (cudaOccupancyMaxActiveClusters), asked once per device, kernel, stash and cluster size.
template <class Op, int V, int Config>
cudaError_t cluster_fits(plan const& p, int device, bool* fits) {
  // 0 unknown, 1 fits, 2 does not fit
  static std::atomic<std::uint8_t> state[max_cached_devices][max_cached_stash]
                                        [max_cluster_size + 1];
  const int n = p.cluster_size;
  if (n < 1 || n > max_cluster_size) {
    *fits = false;
    return cudaSuccess;
  }
  const bool cached = cacheable(p, device);
  if (cached) {
    const int s = state[device][stash_key(p)][n].load(std::memory_order_relaxed);
    if (s != 0) {
      *fits = s == 1;
      return cudaSuccess;
    }
  }
  ROWSOFTMAX_TRY((prepare_kernel<Op, V, Config>(p, device)));
  cudaLaunchAttribute attr[1];
  plan one = p;
  one.grid_ctas = n;
  cudaLaunchConfig_t cfg = launch_config(one, nullptr, attr);
  cfg.dynamicSmemBytes = dynamic_smem_bytes<Op>(p);
  int clusters = 0;
  const cudaError_t err =
      cudaOccupancyMaxActiveClusters(&clusters, kernel_ptr<Op, V, Config>(), &cfg);
  // A size the device rejects outright is "does not fit", not an error of the call.
  if (err != cudaSuccess && err != cudaErrorInvalidClusterSize) return err;
  if (err != cudaSuccess) (void)cudaGetLastError();
  *fits = err == cudaSuccess && clusters > 0;
  if (cached) state[device][stash_key(p)][n].store(*fits ? 1 : 2, std::memory_order_relaxed);
  return cudaSuccess;
}

/// CTAs of the kernel with `p`'s stash that `device` runs at once (for a split or staged split
/// plan: -1 where
/// the device has no cooperative launch), asked once per device, kernel and stash size.
template <class Op, int V, int Config>
cudaError_t resident_ctas(plan const& p, int device, int* out) {
  static std::atomic<int> resident[max_cached_devices][max_cached_stash];  // 0 unknown
  const bool cached = cacheable(p, device);
  int n = cached ? resident[device][stash_key(p)].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    ROWSOFTMAX_TRY((prepare_kernel<Op, V, Config>(p, device)));
    int per_sm = 0, sms = 0, cooperative = 1;
    if constexpr (splits(kernel_configs[Config]))
      ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    ROWSOFTMAX_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    ROWSOFTMAX_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, kernel_ptr<Op, V, Config>(), kernel_configs[Config].threads_per_cta,
        dynamic_smem_bytes<Op>(p)));
    n = cooperative != 0 && per_sm > 0 ? per_sm * sms : -1;
    if (cached) resident[device][stash_key(p)].store(n, std::memory_order_relaxed);
  }
  *out = n;
  return cudaSuccess;
}

/// Whether the device runs plan `p` as launched: a split plan's CTAs all resident at once (its
/// cooperative launch), a cluster plan's clusters, its dynamic shared memory (a stash, a staged
/// share) within a CTA's. Plans without a cluster or dynamic shared memory fit.
template <class Op>
cudaError_t plan_fits(plan const& p, int device, bool* fits) {
  *fits = true;
  if (!splits(kernel_configs[p.config]) && p.cluster_size == 1 && dynamic_smem_bytes<Op>(p) == 0)
    return cudaSuccess;
  return visit_plan<Op>(p, [&](auto v, auto c) {
    constexpr int V = decltype(v)::value, C = decltype(c)::value;
    if constexpr (kernel_configs[C].clustered) {
      return cluster_fits<Op, V, C>(p, device, fits);
    } else {
      int n = 0;
      ROWSOFTMAX_TRY((resident_ctas<Op, V, C>(p, device, &n)));
      *fits = n > 0 && (!splits(kernel_configs[C]) || p.grid_ctas <= n);
      return cudaSuccess;
    }
  });
}

/// Plan for a call on `device` with vector layout `layout`: plan_for, then, while the chosen
/// plan does not fit the device (plan_fits), streaming instead of split, no stash, smaller
/// clusters. The plan's kernel has been prepared and checked.
template <class Op>
cudaError_t choose_plan(direction dir, row_layout layout, std::int64_t rows, std::int64_t cols,
                        int device, bool with_workspace, plan* out) {
  device_limits limits;
  ROWSOFTMAX_TRY(cached_device_limits(device, &limits));
  for (;;) {
    const plan p =
        plan_for(dir, rows, cols, sizeof(typename Op::value_type), layout, limits, with_workspace);
    // plan_for checks that the output's first row holds the workspace in the input's element
    // size; an output of smaller elements may not (then none is kept there).
    constexpr auto out_elem = static_cast<std::int64_t>(sizeof(typename Op::output_type));
    if (p.workspace_in_output && cols * out_elem < p.workspace_bytes + workspace_alignment) {
      layout.out_of_place = false;
      continue;
    }
    bool fits = false;
    ROWSOFTMAX_TRY(plan_fits<Op>(p, device, &fits));
    if (fits) {
      *out = p;
      return cudaSuccess;
    }
    if (splits(kernel_configs[p.config])) {
      with_workspace = false;  // stream instead
      layout.out_of_place = false;
    } else if (p.stash_tiles > 0 || p.stash_halves > 0) {
      limits.shared_bytes_per_sm = 0;  // stream without a stash
    } else if (p.cluster_size > 1) {
      limits.max_cluster_size = p.cluster_size - 1;
    } else {
      return cudaErrorInvalidConfiguration;  // not reached: such plans fit
    }
  }
}

/// Whether `bytes` bytes at `workspace` serve plan `p`: 8-byte aligned and at least
/// `p.workspace_bytes` (plans without a workspace, or with theirs in the output, need nothing).
inline bool workspace_holds(plan const& p, void const* workspace, std::size_t bytes) {
  return p.workspace_bytes == 0 || p.workspace_in_output ||
         (reinterpret_cast<std::uintptr_t>(workspace) % 8 == 0 &&
          bytes >= static_cast<std::size_t>(p.workspace_bytes));
}

/// Where a split plan with its workspace in the output (plan::workspace_in_output) keeps it:
/// from the first 16-byte boundary of the output's first row `y0` (which plan_for has checked
/// holds it), and the windows of that row the kernel stores last (split_workspace::skip_windows):
/// those the workspace covers, from the row's first.
template <class T>
void* workspace_in_output(plan const& p, T* y0, int* skip_windows) {
  const auto at = reinterpret_cast<std::uintptr_t>(y0);
  constexpr std::uintptr_t align = workspace_alignment;  // plan_for counts the same padding
  const std::int64_t pad = static_cast<std::int64_t>((align - at % align) % align);
  const std::int64_t elem = sizeof(T);  // the output's: its windows are p.vec of its elements
  const std::int64_t shift = p.vec > 1 ? static_cast<std::int64_t>(at % (p.vec * elem)) / elem : 0;
  const std::int64_t covered = ceil_div(pad + p.workspace_bytes, elem);  // elements of the row
  *skip_windows = static_cast<int>(ceil_div(shift + covered, p.vec));
  return reinterpret_cast<char*>(y0) + pad;
}

/// Launches a plan made for `a` (by choose_plan, or checked by `run`), without checks. A
/// split plan uses `workspace` (at least `p.workspace_bytes`, 8-byte aligned), or the output's
/// first row (plan::workspace_in_output, see workspace_in_output), zeroed on `stream` first (its
/// counters, and its partials' tags: see meet).
template <class Op>
cudaError_t launch(plan const& p, typename Op::args const& a, void* workspace,
                   cudaStream_t stream) {
  if (p.grid_ctas > 0x7fffffff) return cudaErrorInvalidValue;  // more rows than memory holds
  int skip_windows = 0;
  if (p.workspace_in_output) workspace = workspace_in_output(p, Op::output(a), &skip_windows);
  if (splits(kernel_configs[p.config]))
    ROWSOFTMAX_TRY(
        cudaMemsetAsync(workspace, 0, static_cast<std::size_t>(p.workspace_bytes), stream));
  return visit_plan<Op>(p, [&](auto v, auto cfg) {
    constexpr int V = decltype(v)::value, C = decltype(cfg)::value;
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t lc = launch_config(p, stream, attr);
    if constexpr (splits(kernel_configs[C])) {
      char* const base = static_cast<char*>(workspace);
      const std::int64_t partials = split_partials_offset(p.row_groups);
      const split_workspace ws{reinterpret_cast<unsigned*>(base),
                               reinterpret_cast<tagged_partial*>(base + partials),
                               p.row_groups,
                               p.split_ctas,
                               p.stash_tiles,
                               share_windows(p),
                               skip_windows,
                               p.stash_halves};
      if constexpr (kernel_configs[C].algo == algorithm::split)  // rank x group (split_kernel)
        lc.gridDim = dim3(static_cast<unsigned>(p.split_ctas), static_cast<unsigned>(p.row_groups));
      lc.dynamicSmemBytes = dynamic_smem_bytes<Op>(p);
      attr[0].id = cudaLaunchAttributeCooperative;
      attr[0].val.cooperative = 1;
      lc.numAttrs = 1;
      ROWSOFTMAX_TRY(cudaLaunchKernelEx(&lc, kernel_ptr<Op, V, C>(), a, ws));
      if (skip_windows == 0) return cudaSuccess;
      // The windows of row 0 the workspace covers, one CTA allowed to start before the split
      // kernel ends (see held_back_kernel).
      lc.gridDim = dim3(1, 1, 1);
      lc.dynamicSmemBytes = 0;
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      return cudaLaunchKernelEx(&lc, &held_back_kernel<Op, V, C>, a, ws);
    } else {
      const cluster_arg c{p.cluster_size, share_windows(p),
                          exact_divisor(static_cast<unsigned>(p.cluster_size))};
      lc.dynamicSmemBytes = dynamic_smem_bytes<Op>(p);  // 0 but streaming and staged
      if constexpr (kernel_configs[C].algo == algorithm::streaming) {
        return cudaLaunchKernelEx(&lc, kernel_ptr<Op, V, C>(), a, c, p.stash_tiles, p.stash_halves);
      } else if constexpr (kernel_configs[C].tiled) {
        return cudaLaunchKernelEx(&lc, kernel_ptr<Op, V, C>(), a);
      } else {
        return cudaLaunchKernelEx(&lc, kernel_ptr<Op, V, C>(), a, c);
      }
    }
  });
}

/// Launches any configuration `p` names for `a` (tests and benchmarks force plans through
/// it). Refuses (cudaErrorInvalidValue) a plan that does not match the arguments: a vector
/// width or alignment the pointers do not allow, a tiled configuration for rows that are not
/// contiguous, too little capacity, half tiles in the stash (plan::stash_halves) but for
/// backward streaming or split, a split plan of more meetings a group than its counter counts,
/// or a configuration without a kernel for the op, the width and the type (has_kernel: those
/// plan_for never chooses for them, such as the staged ones backward); and
/// (cudaErrorInvalidConfiguration) a cluster, stash or split the device cannot run.
template <class Op, std::size_t N>
cudaError_t run(plan const& p, tensor_arg const (&t)[N], typename Op::args const& a,
                cudaStream_t stream, void* workspace = nullptr, std::size_t workspace_bytes = 0) {
  constexpr std::size_t elem = sizeof(typename Op::value_type);
  const row_layout layout = layout_of(t, elem, a.rows, a.cols);
  if (!op_has_kernel<Op>(p.config, p.vec)) return cudaErrorInvalidValue;
  if (p.vec > layout.vec || (layout.shifted && !p.shifted && p.vec > 1) ||
      (kernel_configs[p.config].tiled && !layout.contiguous))
    return cudaErrorInvalidValue;
  const std::int64_t windows =
      row_windows(kernel_configs[p.config], {p.vec, p.shifted, layout.contiguous}, a.cols);
  plan q = make_plan(p.config, {p.vec, p.shifted}, a.rows, windows, elem, p.cluster_size);
  if (p.stash_halves != 0 && !((q.algo == algorithm::streaming || q.algo == algorithm::split) &&
                               Op::dir == direction::backward))
    return cudaErrorInvalidValue;  // half tiles: backward streaming and split CTAs only
  if (q.algo == algorithm::streaming) {
    if (p.stash_tiles < 0) return cudaErrorInvalidValue;
    q.stash_tiles = p.stash_tiles;
    q.stash_halves = p.stash_halves;
  }
  if (splits(kernel_configs[q.config])) {
    if (p.row_groups < 1 || p.row_groups > a.rows || p.split_ctas < 1 || p.stash_tiles < 0)
      return cudaErrorInvalidValue;
    // A group's arrivals over its rows must fit meet's 32-bit counter and int meeting index (the
    // planner's split rows, of about 1M elements and more, are far from it).
    if (ceil_div(a.rows, p.row_groups) >
        std::int64_t{std::numeric_limits<int>::max()} / p.split_ctas)
      return cudaErrorInvalidValue;
    q = with_groups(q, p.row_groups, p.split_ctas);
    q.stash_tiles = p.stash_tiles;
    q.stash_halves = p.stash_halves;
    if (workspace == nullptr || !workspace_holds(q, workspace, workspace_bytes))
      return cudaErrorInvalidValue;
  }
  if (!plan_holds(q)) return cudaErrorInvalidValue;
  int device = 0;
  ROWSOFTMAX_TRY(cudaGetDevice(&device));
  bool fits = false;
  ROWSOFTMAX_TRY(plan_fits<Op>(q, device, &fits));
  if (!fits) return cudaErrorInvalidConfiguration;
  return launch<Op>(q, a, workspace, stream);
}

}  // namespace rowsoftmax::detail
