// SPDX-License-Identifier: Apache-2.0
// The GPU suite (gpu_tests.cuh) for __nv_bfloat16.
#include "gpu_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Bf16, Gpu, ::testing::Types<__nv_bfloat16>);
}  // namespace rowsoftmax::test
