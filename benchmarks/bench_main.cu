// SPDX-License-Identifier: Apache-2.0
// rowsoftmax benchmark: forward and backward over a cols sweep for fp32, fp16 and bf16, with
// the device-to-device copy bandwidth measured in the same process as the ceiling.
//
//   rowsoftmax_bench [--benchmark_filter=REGEX] [--benchmark_out=FILE --benchmark_out_format=json]
//
// Without a CUDA device it prints one line saying so and exits 0 (--benchmark_list_tests still
// lists the benchmarks).
//
// Prints Google Benchmark's table, then a summary: TB/s (bytes: forward 2*rows*cols*size,
// backward 3*rows*cols*size, over the median time of one launch, CUDA events) and its
// percentage of the copy bandwidth, each launch synchronized before the next; then the same
// with the calls issued back to back (batches of calls between two events), against the copy
// timed back to back.
// Rows "ceiling ..." (bench_ceiling.cu) time kernels and copies that only move bytes, beside the
// copy: an empty kernel, copies of the decode rows' bytes, element-wise type conversions.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.cuh"

namespace rowsoftmax::bench {

namespace {
__global__ void fill_kernel(float* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = (h >> 8) * (16.0f / 16777216.0f) - 8.0f;  // uniform in [-8, 8)
  }
}
template <class T>
__global__ void convert_kernel(float const* in, T* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = detail::from_float<T>(in[i]);
}
}  // namespace

void fill_random(float* p, std::size_t n, std::uint32_t seed) {
  fill_kernel<<<1024, 256>>>(p, n, seed);
  check(cudaGetLastError(), "fill");
}
template <class T>
void fill_converted(T* p, std::size_t n, std::uint32_t seed) {
  float* tmp = nullptr;
  check(cudaMalloc(&tmp, n * sizeof(float)), "malloc");
  fill_random(tmp, n, seed);
  convert_kernel<<<1024, 256>>>(tmp, p, n);
  check(cudaDeviceSynchronize(), "convert");
  cudaFree(tmp);
}
void fill_random(__half* p, std::size_t n, std::uint32_t seed) {
  fill_converted(p, n, seed);
}
void fill_random(__nv_bfloat16* p, std::size_t n, std::uint32_t seed) {
  fill_converted(p, n, seed);
}

pool& pool::get() {
  static pool p = [] {
    pool q;
    for (int i = 0; i < 3; ++i) check(cudaMalloc(&q.buf[i], bytes), "pool");
    return q;
  }();
  return p;
}

copy_ceiling const& copy_bandwidth() {
  static const copy_ceiling bw = [] {
    pool& p = pool::get();
    p.as<float>(0);  // copy real data
    const auto copy = [&] {
      return cudaMemcpyAsync(p.buf[1], p.buf[0], pool::bytes, cudaMemcpyDeviceToDevice);
    };
    const auto tbps = [](double us) { return 2.0 * pool::bytes / (us * 1e-6) / 1e12; };
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "event");
    check(cudaEventCreate(&b), "event");
    std::vector<float> ms;
    for (int i = 0; i < 33; ++i) {
      const float t = events_ms(a, b, copy);
      if (i >= 3) ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    const double us = 1e3 * ms[ms.size() / 2];
    return copy_ceiling{tbps(us), tbps(time_back_to_back(copy, us))};
  }();
  return bw;
}

namespace {
__global__ void spin(long long ns) {
  long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
}  // namespace

void hold_gpu(long long ns) {
  spin<<<1, 1>>>(ns);
  check(cudaGetLastError(), "hold");
}

void flush_l2() {
  static const std::pair<void*, std::size_t> scratch = [] {
    int device = 0, l2 = 0;
    check(cudaGetDevice(&device), "device");
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 size");
    const std::size_t n = 2 * static_cast<std::size_t>(l2);
    void* p = nullptr;
    check(cudaMalloc(&p, n), "L2 scratch");
    return std::pair<void*, std::size_t>{p, n};
  }();
  static int value = 0;
  check(cudaMemsetAsync(scratch.first, ++value & 0xff, scratch.second), "flush L2");
}

std::map<std::string, result>& results() {
  static std::map<std::string, result> r;
  return r;
}

/// Whether the command line asks only for the list of benchmarks (--benchmark_list_tests, or
/// =true/=1), which needs no device.
bool lists_tests(int argc, char** argv) {
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string flag = "--benchmark_list_tests";
    if (a == flag || a == flag + "=true" || a == flag + "=1") list = true;
    if (a == flag + "=false" || a == flag + "=0") list = false;
  }
  return list;
}

}  // namespace rowsoftmax::bench

int main(int argc, char** argv) {
  using namespace rowsoftmax::bench;
  const bool list_only = lists_tests(argc, argv);  // before Initialize consumes the flags
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Registration plans for a default device description and touches no device, so the list
  // needs none.
  register_float();
  register_half();
  register_bf16();
  register_ceilings();
  if (list_only) {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  int devices = 0;
  const cudaError_t no_device = cudaGetDeviceCount(&devices);
  if (no_device != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s; nothing to benchmark\n",
                no_device != cudaSuccess ? cudaGetErrorString(no_device) : "none found");
    benchmark::Shutdown();
    return 0;
  }
  int device = 0;
  check(cudaGetDevice(&device), "device");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "properties");
  const double copy = copy_bandwidth().synchronized, copy_b2b = copy_bandwidth().back_to_back;
  std::printf(
      "device: %s (%d SMs), copy bandwidth (read+write): %.3f TB/s synchronized, %.3f TB/s back "
      "to back\n",
      prop.name, prop.multiProcessorCount, copy, copy_b2b);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  // us, TB/s, %copy: each launch synchronized before the next, against the copy timed so;
  // b2b us, b2b %copy: back to back, against the copy timed so (- where not timed so).
  std::printf("\nsummary (copy %.3f TB/s synchronized, %.3f TB/s back to back, %s)\n", copy,
              copy_b2b, prop.name);
  std::printf("%-9s %-5s %9s %8s %10s %7s %7s %10s %7s  %s\n", "direction", "dtype", "cols", "rows",
              "us", "TB/s", "%copy", "b2b us", "b2b%", "plan");
  std::vector<result> rows;
  for (auto const& kv : results()) rows.push_back(kv.second);
  std::stable_sort(rows.begin(), rows.end(), [](result const& a, result const& b) {
    if (a.direction != b.direction) return a.direction > b.direction;  // forward first
    if (a.dtype != b.dtype) return a.dtype < b.dtype;
    if (a.cols != b.cols) return a.cols < b.cols;
    return a.rows < b.rows;
  });
  for (auto const& r : rows) {
    char b2b[32] = "         -       -";
    if (r.b2b_us > 0)
      std::snprintf(b2b, sizeof b2b, "%10.2f %6.1f%%", r.b2b_us, 100.0 * r.b2b_tbps / copy_b2b);
    std::printf("%-9s %-5s %9lld %8lld %10.2f %7.3f %6.1f%% %s  %s\n", r.direction.c_str(),
                r.dtype.c_str(), static_cast<long long>(r.cols), static_cast<long long>(r.rows),
                r.us, r.tbps, 100.0 * r.tbps / copy, b2b, r.plan.c_str());
  }
  return 0;
}
