// SPDX-License-Identifier: Apache-2.0
// The GPU suite (gpu_tests.cuh) for float.
#include "gpu_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Float, Gpu, ::testing::Types<float>);
}  // namespace rowsoftmax::test
