// SPDX-License-Identifier: Apache-2.0
// The __half benchmarks (one translation unit per type, so they compile in parallel).
#include "bench_common.cuh"

namespace rowsoftmax::bench {
void register_half() {
  register_type<__half>();
  register_out_type<__half, float>();
}
}  // namespace rowsoftmax::bench
