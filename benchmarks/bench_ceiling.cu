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

/// Eight elements a step: `Inputs` tensors of In read (their product converted), Out written,
/// 16-byte accesses where the type allows two or one, grid-stride.
template <class In, class Out, int Inputs>
__global__ void __launch_bounds__(256)
    mix_kernel(In const* a, In const* b, Out* out, std::int64_t steps) {
  static_assert(Inputs == 1 || Inputs == 2, "one or two inputs");
  for (std::int64_t s = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; s < steps;
       s += std::int64_t{gridDim.x} * blockDim.x) {
    const auto x = detail::vec_t<In, 8>::load(a + s * 8, detail::no_hint{});
    detail::vec_t<In, 8> y{};
    if constexpr (Inputs == 2) y = detail::vec_t<In, 8>::load(b + s * 8, detail::no_hint{});
    float v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = Inputs == 2 ? x.at(i) * y.at(i) : x.at(i);
    const auto o = detail::vec_t<Out, 8>::round(v);
    o.store(out + s * 8);
  }
}

/// Registers "ceiling/<name>": `Inputs` tensors of In into one of Out over sweep_elems elements,
/// timed as the softmax benchmarks are, its bytes counted at each tensor's size.
template <class In, class Out, int Inputs>
void register_mix(char const* name_suffix) {
  const std::string name = std::string("ceiling/") + name_suffix;
  register_timed(name, [name, name_suffix](benchmark::State& state) {
    pool& p = pool::get();
    In const* a = p.as<In>(0);
    In const* b = p.as<In>(2);
    Out* out = static_cast<Out*>(p.buf[1]);
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "device");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SMs");
    const std::int64_t steps = sweep_elems / 8;
    const auto launch = [&] {
      mix_kernel<In, Out, Inputs><<<sms * 8, 256>>>(a, b, out, steps);
      return cudaGetLastError();
    };
    const double us = time_launches(state, launch);
    result& r = results()[name];
    const double b2b_us = us <= 0 ? 0.0 : r.b2b_us > 0 ? r.b2b_us : time_back_to_back(launch, us);
    const double bytes = static_cast<double>(sweep_elems) * (Inputs * sizeof(In) + sizeof(Out));
    plan none{};
    report<In>(state, r, direction::forward, none, std::string(" [ceiling ") + name_suffix + "]", 1,
               sweep_elems, bytes, us, b2b_us);
    r.direction = "ceiling";
  });
}

}  // namespace

void register_ceilings() {
  register_mix<__nv_bfloat16, float, 1>("bf16_to_fp32");          // forward, bf16 in, float out
  register_mix<float, __nv_bfloat16, 1>("fp32_to_bf16");          // forward, float in, bf16 out
  register_mix<__nv_bfloat16, __nv_bfloat16, 1>("bf16_to_bf16");  // as the copy, 16-bit
  register_mix<float, float, 1>("fp32_to_fp32");                  // as the copy, float
  register_mix<__nv_bfloat16, float, 2>("2bf16_to_fp32");  // backward: dy, y bf16 into dx float
  register_mix<float, __nv_bfloat16, 2>("2fp32_to_bf16");  // backward: dy, y float into dx bf16
  register_mix<float, float, 2>("2fp32_to_fp32");          // backward, float
}

}  // namespace rowsoftmax::bench
