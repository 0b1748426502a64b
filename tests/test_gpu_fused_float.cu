// SPDX-License-Identifier: Apache-2.0
// The fused GPU suite (fused_tests.cuh) for float, and the fused launchers' host-only argument
// tests (fused_validation_tests.cuh), which call the same float launchers.
#include "fused_tests.cuh"
#include "fused_validation_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Float, Fused, ::testing::Types<float>);
}  // namespace rowsoftmax::test
