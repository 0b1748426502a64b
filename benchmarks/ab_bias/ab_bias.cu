// SPDX-License-Identifier: Apache-2.0
// A/B of the biased forward (biased_softmax_options) between two header trees, small enough to
// carry to a GPU machine in one piece (the benchmark binary is not): the benchmark's bias rows
// (median of 30 launches) and a hash of the outputs of ragged shapes (odd bias addresses, every
// tier, log-softmax), which must match between the two builds where a change keeps the
// arithmetic. Not built by CMake; build each side and run them alternately (run.sh):
//
//   nvcc -O3 -DNDEBUG -std=c++17 -arch=sm_90 -I<old tree>/include ab_bias.cu -o ab_old
//   nvcc -O3 -DNDEBUG -std=c++17 -arch=sm_90 -I<new tree>/include ab_bias.cu -o ab_new
//   OUT=out benchmarks/ab_bias/run.sh
//
// -DAB_ONLY=<1|2|3> builds one type's kernels (fp32, fp16, bf16) (a shorter build, for profiling);
// the argument `time` runs the timed rows alone, each with the plan it ran.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rowsoftmax/rowsoftmax.cuh>
#include <vector>
using namespace rowsoftmax;
// Launches a timed row takes (AB_REPS in the environment, default 30; 0 under a profiler).
static int timed_reps() {
  const char* r = std::getenv("AB_REPS");
  return r != nullptr ? std::atoi(r) : 30;
}
#define CK(x)                                                       \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      printf("ERR %s line %d\n", cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                      \
    }                                                               \
  } while (0)
template <class T>
__global__ void fill(T* p, size_t n, unsigned seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = detail::from_float<T>(lo + (hi - lo) * (h & 0xffffff) / 16777216.0f);
  }
}
__global__ void hashk(unsigned char const* p, size_t n, unsigned long long* out) {
  unsigned long long h = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    h += (unsigned long long)(p[i] + 1) * (i * 0x9E3779B97F4A7C15ull + 1);
  atomicAdd(out, h);
}
template <class T>
unsigned long long hash(T const* p, size_t n) {
  unsigned long long* d;
  CK(cudaMalloc(&d, 8));
  CK(cudaMemset(d, 0, 8));
  hashk<<<264, 256>>>((unsigned char const*)p, n * sizeof(T), d);
  unsigned long long h;
  CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  cudaFree(d);
  return h;
}
template <class T>
void one(const char* name, long rows, long cols, bool scores, int reps, bool log = false,
         int off = 0) {
  T *x, *y;
  void* b;
  size_t n = rows * cols;
  CK(cudaMalloc(&x, n * sizeof(T)));
  CK(cudaMalloc(&y, n * sizeof(T)));
  size_t bn = scores ? n + 8 : cols + 8;
  size_t be = scores ? sizeof(T) : 4;
  CK(cudaMalloc(&b, bn * be));
  fill<T><<<264, 256>>>(x, n, 1, -8, 8);
  if (scores)
    fill<T><<<264, 256>>>((T*)b, bn, 2, -2, 2);
  else
    fill<float><<<264, 256>>>((float*)b, bn, 2, -2, 2);
  biased_softmax_options o;
  o.scale = 0.125f;
  o.bias = scores ? (void const*)((T const*)b + off) : (void const*)((float const*)b + off);
  o.bias_dtype = scores ? bias_type::input : bias_type::f32;
  o.bias_strides = scores ? broadcast_strides{cols, 0, 0} : broadcast_strides{0, 0, 0};
  auto go = [&] {
    return log ? log_softmax_forward(x, cols, y, cols, rows, cols, o)
               : softmax_forward(x, cols, y, cols, rows, cols, o);
  };
  CK(go());
  CK(cudaDeviceSynchronize());
  unsigned long long h = hash(y, n);
  std::vector<float> t;
  cudaEvent_t a, c;
  cudaEventCreate(&a);
  cudaEventCreate(&c);
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a);
    go();
    cudaEventRecord(c);
    cudaEventSynchronize(c);
    float ms;
    cudaEventElapsedTime(&ms, a, c);
    t.push_back(ms * 1000);
  }
  std::sort(t.begin(), t.end());
  double us = reps ? t[t.size() / 2] : 0;
  double bytes = 2.0 * n * sizeof(T) + (scores ? n * sizeof(T) : cols * 4.0);
  plan p;
  CK(fused_forward_plan(x, cols, y, cols, rows, cols, o, log, &p));
  printf("%-6s %8ld %8ld %s %-5s us %9.2f  TB/s %6.3f  hash %016llx  %s\n", name, rows, cols,
         scores ? "Tbias" : "f32b ", log ? "log" : "soft", us, reps ? bytes / us / 1e6 : 0, h,
         to_string(p).c_str());
  cudaFree(x);
  cudaFree(y);
  cudaFree(b);
}
template <class T>
void all(const char* name, bool timed_only) {
  const int reps = timed_reps();
  for (long cols : {512L, 2048L, 4096L}) one<T>(name, (1L << 27) / cols, cols, true, reps);
  for (long cols : {32768L, 131072L, 1048576L}) one<T>(name, (1L << 27) / cols, cols, false, reps);
  if (timed_only) return;
  // Correctness shapes (hash only): ragged, odd offsets, every tier, log too.
  for (long cols : {1L, 7L, 33L, 130L, 1000L, 4097L, 20000L, 50257L, 131072L, 300001L, 1048579L})
    for (int off : {0, 1}) {
      one<T>(name, 3, cols, true, 0, off == 1, off);
      one<T>(name, 5, cols, false, 0, off == 0, off);
    }
  one<T>(name, 517, 1000, true, 0, false, 3);
  one<T>(name, 517, 33, false, 0, true, 1);
}
int main(int argc, char** argv) {
  const bool timed_only = argc > 1 && std::strcmp(argv[1], "time") == 0;
#if !defined(AB_ONLY) || AB_ONLY == 1
  all<float>("fp32", timed_only);
#endif
#if !defined(AB_ONLY) || AB_ONLY == 2
  all<__half>("fp16", timed_only);
#endif
#if !defined(AB_ONLY) || AB_ONLY == 3
  all<__nv_bfloat16>("bf16", timed_only);
#endif
}
