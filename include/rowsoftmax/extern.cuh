// SPDX-License-Identifier: Apache-2.0
// Compile once: include this header instead of <rowsoftmax/rowsoftmax.cuh> in the translation
// units that call the launchers, and <rowsoftmax/instantiate.cuh> in exactly one .cu of the same
// program. The calls then compile no kernel (a few seconds of parsing instead of a minute and
// more of compiling per unit; docs/compile-once.md has the numbers) and link to the one copy.
//
//   // softmax_kernels.cu, once in the project
//   #include <rowsoftmax/instantiate.cuh>
//
//   // any other .cu
//   #include <rowsoftmax/extern.cuh>
//   rowsoftmax::softmax_forward(x, y, rows, cols, stream);
//
// Every launcher, plan query and workspace explanation for float, __half and __nv_bfloat16 is
// declared here (explicit instantiation declarations, [temp.explicit]), so none is
// instantiated by the units that include it; so are the two internal functions that reach the
// plain kernels (detail::plan_fits and detail::launch), so that internal callers, such as the
// project's tests and benchmark forcing plans, compile none either. The fused launchers
// (fused.cuh) are not declared: a unit compiles the fused kernels it calls. Without the
// instantiating unit the program fails to link (undefined rowsoftmax::softmax_forward<...>), not at
// run time.
#pragma once

#include "detail/instances.hpp"
#include "rowsoftmax.cuh"

ROWSOFTMAX_DETAIL_INSTANCES(extern template, float);
ROWSOFTMAX_DETAIL_INSTANCES(extern template, __half);
ROWSOFTMAX_DETAIL_INSTANCES(extern template, __nv_bfloat16);
