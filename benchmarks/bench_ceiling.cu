// SPDX-License-Identifier: Apache-2.0
// Ceilings beside the copy: element-wise kernels that move the bytes of a call whose reads and
// writes differ in size or count (another output type), and nothing else, so that a softmax row
// that falls short of the copy can be told from the memory system's own cost of that traffic.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "bench_common.cuh"

namespace rowsoftmax::bench {
namespace {

/// Windows a thread of mix_kernel moves, all loaded before the first store, as a register-tier
/// softmax thread holds its row.
inline constexpr int mix_steps = 8;

/// `Inputs` tensors of In read (their product converted), Out written: each thread loads its
/// mix_steps windows of `E` elements (a warp's load or store of a window: 32 contiguous windows),
/// then stores them, one CTA of 256 threads a chunk (no grid-stride: as many CTAs as chunks, as
/// the register tiers launch). Windows of 8 16-bit elements store 32 bytes of float a lane (two
/// 16-byte stores 32 bytes apart), as the softmax kernels of 16-bit input and float output do;
/// windows of 4 load 8 bytes of 16-bit input and store 16 of float.
template <class In, class Out, int Inputs, int E>
__global__ void __launch_bounds__(256) mix_kernel(In const* a, In const* b, Out* out) {
  static_assert(Inputs == 1 || Inputs == 2, "one or two inputs");
  using in_vec = detail::vec_t<In, E>;
  const std::int64_t first = (blockIdx.x * std::int64_t{mix_steps} * 256 + threadIdx.x) * E;
  in_vec x[mix_steps], y[mix_steps];
#pragma unroll
  for (int k = 0; k < mix_steps; ++k) {
    x[k] = in_vec::load(a + first + k * 256 * E, detail::no_hint{});
    if constexpr (Inputs == 2) y[k] = in_vec::load(b + first + k * 256 * E, detail::no_hint{});
  }
#pragma unroll
  for (int k = 0; k < mix_steps; ++k) {
    float v[E];
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = Inputs == 2 ? x[k].at(i) * y[k].at(i) : x[k].at(i);
    detail::vec_t<Out, E>::round(v).store(out + first + k * 256 * E);
  }
}

__global__ void empty_kernel() {}

/// Times `launch` as `how` says (time_launches; idle also back to back) and records it in the
/// summary as a "ceiling" row labelled `label`, of `bytes` moved.
template <class F>
void time_ceiling(benchmark::State& state, std::string const& name, std::string const& label,
                  timing how, std::int64_t rows, std::int64_t cols, double bytes, F&& launch) {
  const double us = time_launches(state, launch, how);
  result& r = results()[name];
  const double b2b_us = how != timing::idle || us <= 0 ? 0.0
                        : r.b2b_us > 0                 ? r.b2b_us
                                                       : time_back_to_back(launch, us);
  const double tbps = us > 0 ? bytes / (us * 1e-6) / 1e12 : 0;
  state.counters["median_us"] = us;
  state.counters["pct_copy"] = 100.0 * tbps / copy_bandwidth().synchronized;
  r = {"ceiling", "-",    label + timing_tag(how),
       rows,      cols,   us,
       tbps,      b2b_us, b2b_us > 0 ? bytes / (b2b_us * 1e-6) / 1e12 : 0};
}

/// Registers "ceiling/<name>/window:<E>": `Inputs` tensors of In into one of Out over
/// sweep_elems elements in windows of E, timed as the softmax benchmarks are, its bytes counted
/// at each tensor's size.
template <class In, class Out, int Inputs, int E = 8>
void register_mix(char const* suffix) {
  const std::string name_suffix = std::string(suffix) + "/window:" + std::to_string(E);
  const std::string name = "ceiling/" + name_suffix;
  register_timed(name, [name, name_suffix](benchmark::State& state) {
    pool& p = pool::get();
    In const* a = p.as<In>(0);
    In const* b = p.as<In>(2);
    Out* out = static_cast<Out*>(p.buf[1]);
    static_assert(sweep_elems % (mix_steps * 256 * E) == 0, "whole CTAs");
    const auto launch = [&] {
      mix_kernel<In, Out, Inputs, E><<<sweep_elems / (mix_steps * 256 * E), 256>>>(a, b, out);
      return cudaGetLastError();
    };
    time_ceiling(state, name, name_suffix, timing::idle, 1, sweep_elems,
                 static_cast<double>(sweep_elems) * (Inputs * sizeof(In) + sizeof(Out)), launch);
  });
}

/// Registers "ceiling/launch/<queued|cold>" (an empty kernel: the least a call takes, timed so)
/// and "ceiling/copy/rows:R/cols:C/<queued|cold>" (a device-to-device copy of the bytes of an
/// fp32 forward of R rows of C columns, read and written once, timed as the decode rows are).
void register_small_calls() {
  for (timing how : {timing::queued, timing::cold}) {
    const std::string name = "ceiling/launch/" + timing_name(how);
    register_timed(name, [name, how](benchmark::State& state) {
      time_ceiling(state, name, "empty kernel", how, 1, 1, 0.0, [] {
        empty_kernel<<<1, 32>>>();
        return cudaGetLastError();
      });
    });
    for (std::int64_t rows : {1, 8, 64}) {
      const std::int64_t cols = 128256;
      const std::string copy = "ceiling/copy/rows:" + std::to_string(rows) +
                               "/cols:" + std::to_string(cols) + "/" + timing_name(how);
      register_timed(copy, [copy, how, rows, cols](benchmark::State& state) {
        pool& p = pool::get();
        float* a = p.as<float>(0);
        float* b = p.as<float>(1);
        const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
        time_ceiling(state, copy, "copy of fp32 rows", how, rows, cols,
                     2.0 * static_cast<double>(bytes),
                     [&] { return cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); });
      });
    }
  }
}

}  // namespace

void register_ceilings() {
  register_small_calls();
  register_mix<__nv_bfloat16, float, 1>("bf16_to_fp32");          // forward, bf16 in, float out
  register_mix<float, __nv_bfloat16, 1>("fp32_to_bf16");          // forward, float in, bf16 out
  register_mix<__nv_bfloat16, __nv_bfloat16, 1>("bf16_to_bf16");  // as the copy, 16-bit
  register_mix<float, float, 1>("fp32_to_fp32");                  // as the copy, float
  register_mix<__nv_bfloat16, float, 2>("2bf16_to_fp32");  // backward: dy, y bf16 into dx float
  register_mix<float, __nv_bfloat16, 2>("2fp32_to_bf16");  // backward: dy, y float into dx bf16
  register_mix<float, float, 2>("2fp32_to_fp32");          // backward, float
  // The float stores of 16 contiguous bytes a lane: 16-bit windows of 4 (8-byte loads), and
  // float windows of 4 (the copy's accesses).
  register_mix<__nv_bfloat16, float, 1, 4>("bf16_to_fp32");
  register_mix<__nv_bfloat16, float, 2, 4>("2bf16_to_fp32");
  register_mix<float, float, 1, 4>("fp32_to_fp32");
  register_mix<float, __nv_bfloat16, 1, 4>("fp32_to_bf16");
}

}  // namespace rowsoftmax::bench
