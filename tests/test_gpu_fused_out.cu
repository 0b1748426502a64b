// SPDX-License-Identifier: Apache-2.0
// The fused GPU suite's other output types (fused_tests.cuh, FusedOut): bf16 and fp16 in, fp32
// out, and fp32 in, bf16 out.
#include "fused_tests.cuh"

namespace rowsoftmax::test {
using OutTypes =
    ::testing::Types<io<__nv_bfloat16, float>, io<__half, float>, io<float, __nv_bfloat16>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Out, FusedOut, OutTypes);
}  // namespace rowsoftmax::test
