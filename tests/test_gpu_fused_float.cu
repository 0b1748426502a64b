// SPDX-License-Identifier: Apache-2.0
// The fused GPU suite (fused_tests.cuh) for float.
#include "fused_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Float, Fused, ::testing::Types<float>);
}  // namespace rowsoftmax::test
