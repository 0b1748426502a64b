// SPDX-License-Identifier: Apache-2.0
// The GPU suite (gpu_tests.cuh) for __half.
#include "gpu_tests.cuh"

namespace rowsoftmax::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Half, Gpu, ::testing::Types<__half>);
}  // namespace rowsoftmax::test
