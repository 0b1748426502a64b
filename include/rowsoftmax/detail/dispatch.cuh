// SPDX-License-Identifier: Apache-2.0
// From a plan to a launched kernel: the one place where runtime plan values become template
// arguments, plus the per-kernel cluster checks (non-portable size 16, occupancy) done once per
// device and kernel.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../plan.hpp"
#include "host.hpp"
#include "kernels.cuh"

namespace rowsoftmax::detail {

template <class Op, int V, int Config>
constexpr auto kernel_ptr() {
  if constexpr (kernel_configs[Config].algo == algorithm::streaming) {
    return &streaming_kernel<Op, V, Config>;
  } else {
    return &resident_kernel<Op, V, Config>;
  }
}

/// Calls f(std::integral_constant<int, V>, std::integral_constant<int, Config>) for the plan's
/// vector width and configuration: the switch from plan to template arguments.
template <class Op, class F, int V, std::size_t... I>
cudaError_t visit_configs(int config, F&& f, std::integral_constant<int, V> v,
                          std::index_sequence<I...>) {
  cudaError_t err = cudaErrorInvalidValue;  // an unknown configuration
  (void)((config == static_cast<int>(I) &&
          (
              err =
                  [&] {
                    constexpr int c = static_cast<int>(I);
                    if constexpr (V == 1 && !kernel_configs[c].scalar_ok) {
                      return cudaErrorInvalidValue;
                    } else {
                      return f(v, std::integral_constant<int, c>{});
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

/// Whether the kernel can run clusters of `p.cluster_size` CTAs on `device`: sets the
/// non-portable size attribute and asks cudaOccupancyMaxActiveClusters, once per device, kernel
/// and cluster size.
template <class Op, int V, int Config>
cudaError_t cluster_fits(plan const& p, int device, bool* fits) {
  constexpr int max_cached = 64;
  // 0 unknown, 1 fits, 2 does not fit
  static std::atomic<std::uint8_t> state[max_cached][max_cluster_size + 1];
  const int n = p.cluster_size;
  if (n < 1 || n > max_cluster_size) {
    *fits = false;
    return cudaSuccess;
  }
  const bool cached = device >= 0 && device < max_cached;
  if (cached) {
    const int s = state[device][n].load(std::memory_order_relaxed);
    if (s != 0) {
      *fits = s == 1;
      return cudaSuccess;
    }
  }
  auto kernel = kernel_ptr<Op, V, Config>();
  ROWSOFTMAX_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchAttribute attr[1];
  plan one = p;
  one.grid_ctas = n;
  cudaLaunchConfig_t cfg = launch_config(one, nullptr, attr);
  int clusters = 0;
  const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
  // A size the device rejects outright is "does not fit", not an error of the call.
  if (err != cudaSuccess && err != cudaErrorInvalidClusterSize) return err;
  if (err != cudaSuccess) (void)cudaGetLastError();
  *fits = err == cudaSuccess && clusters > 0;
  if (cached) state[device][n].store(*fits ? 1 : 2, std::memory_order_relaxed);
  return cudaSuccess;
}

/// Plan for a call on `device` with vector layout `layout`: plan_for, then smaller clusters
/// while the chosen one does not fit the device. The plan's cluster kernel has been checked.
template <class Op>
cudaError_t choose_plan(direction dir, row_layout layout, std::int64_t rows, std::int64_t cols,
                        int device, plan* out) {
  device_limits limits;
  ROWSOFTMAX_TRY(cached_device_limits(device, &limits));
  for (;;) {
    const plan p = plan_for(dir, rows, cols, sizeof(typename Op::value_type), layout, limits);
    if (p.cluster_size == 1) {
      *out = p;
      return cudaSuccess;
    }
    bool fits = false;
    ROWSOFTMAX_TRY(visit_plan<Op>(p, [&](auto v, auto c) {
      return cluster_fits<Op, decltype(v)::value, decltype(c)::value>(p, device, &fits);
    }));
    if (fits) {
      *out = p;
      return cudaSuccess;
    }
    limits.max_cluster_size = p.cluster_size - 1;
  }
}

/// Launches a plan made for `a` (by choose_plan, or checked by `run`), without checks.
template <class Op>
cudaError_t launch(plan const& p, typename Op::args const& a, cudaStream_t stream) {
  const int cluster = p.cluster_size;
  return visit_plan<Op>(p, [&](auto v, auto cfg) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t lc = launch_config(p, stream, attr);
    return cudaLaunchKernelEx(&lc, kernel_ptr<Op, decltype(v)::value, decltype(cfg)::value>(), a,
                              cluster);
  });
}

/// Launches any configuration `p` names for `a` (tests and benchmarks force plans through
/// it). Refuses (cudaErrorInvalidValue) a plan that does not match the arguments: a vector
/// width or alignment the pointers do not allow, or too little capacity; and
/// (cudaErrorInvalidConfiguration) a cluster the device cannot run.
template <class Op, std::size_t N>
cudaError_t run(plan const& p, tensor_arg const (&t)[N], typename Op::args const& a,
                cudaStream_t stream) {
  constexpr std::size_t elem = sizeof(typename Op::value_type);
  const row_layout layout = layout_of(t, elem, a.rows);
  if (p.config < 0 || p.config >= num_kernel_configs) return cudaErrorInvalidValue;
  if (p.vec > layout.vec || (layout.shifted && !p.shifted && p.vec > 1))
    return cudaErrorInvalidValue;
  const std::int64_t windows = ceil_div(a.cols + (p.vec > 1 && p.shifted ? p.vec - 1 : 0), p.vec);
  const plan q = make_plan(p.config, {p.vec, p.shifted}, a.rows, windows, elem, p.cluster_size);
  if (!plan_holds(q)) return cudaErrorInvalidValue;
  if (q.grid_ctas > 0x7fffffff) return cudaErrorInvalidValue;  // more rows than memory holds
  if (q.cluster_size > 1) {
    int device = 0;
    ROWSOFTMAX_TRY(cudaGetDevice(&device));
    bool fits = false;
    ROWSOFTMAX_TRY(visit_plan<Op>(q, [&](auto v, auto cfg) {
      return cluster_fits<Op, decltype(v)::value, decltype(cfg)::value>(q, device, &fits);
    }));
    if (!fits) return cudaErrorInvalidConfiguration;
  }
  return launch<Op>(q, a, stream);
}

}  // namespace rowsoftmax::detail
