// SPDX-License-Identifier: Apache-2.0
// Compile once, the fused launchers too: include this header instead of <rowsoftmax/extern.cuh>
// in the translation units that call the fused launchers (fused.cuh: options, masks), and define
// the variants the program calls once each, one .cu per element type and options type (they
// compile in parallel):
//
//   // softmax_fused_half.cu, once in the project
//   #include <rowsoftmax/instantiate_fused.cuh>
//   ROWSOFTMAX_INSTANTIATE_FUSED(__half, rowsoftmax::masked_softmax_options);
//
//   // any other .cu
//   #include <rowsoftmax/extern_fused.cuh>
//   rowsoftmax::softmax_forward(x, x_stride, y, y_stride, rows, cols, masked_options, stream);
//
// Declares (explicit instantiation declarations) what extern.cuh declares, and for every element
// type, output type (the input's; float for 16-bit inputs, 16-bit for float) and options type
// (softmax_options, masked_softmax_options, bool_masked_softmax_options, biased_softmax_options)
// the functions through which the fused launchers, plan queries and explanations reach their
// kernels (softmax and log-softmax, forward and backward), so that no unit including it compiles
// a kernel. The plain launchers come from a unit including <rowsoftmax/instantiate.cuh>, as
// with extern.cuh. A variant called but defined nowhere fails to link (undefined
// rowsoftmax::detail::launch<rowsoftmax::detail::fused_forward_op<...>>), not at run time. See
// docs/compile-once.md.
#pragma once

#include "detail/fused_instances.hpp"
#include "extern.cuh"

ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, float, float);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, __half, __half);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, __nv_bfloat16, __nv_bfloat16);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, __half, float);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, __nv_bfloat16, float);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, float, __half);
ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(extern template, float, __nv_bfloat16);
