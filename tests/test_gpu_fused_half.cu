// SPDX-License-Identifier: Apache-2.0
// The fused GPU suite (fused_tests.cuh) for __half.
#include "fused_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Half, Fused, ::testing::Types<__half>);
}  // namespace rowsoftmax::test
