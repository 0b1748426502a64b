// SPDX-License-Identifier: Apache-2.0
// The fused GPU suite (fused_tests.cuh) for __nv_bfloat16.
#include "fused_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Bf16, Fused, ::testing::Types<__nv_bfloat16>);
}  // namespace rowsoftmax::test
