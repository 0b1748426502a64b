// SPDX-License-Identifier: Apache-2.0
// The __nv_bfloat16 benchmarks (one translation unit per type, so they compile in parallel).
#include "bench_common.cuh"

namespace rowsoftmax::bench {
void register_bf16() {
  register_type<__nv_bfloat16>();
  register_out_type<__nv_bfloat16, float>();
}
}  // namespace rowsoftmax::bench
